/**
 * Points at which a worker stops itself for the fault tests: `CRASH_AT` names points where it
 * kills itself with SIGKILL, `PAUSE_AT` points where it pauses itself with SIGSTOP (a test
 * wakes it with SIGCONT), so a real process is cut off at an exact place. Each may name
 * several points, comma-separated.
 */
export const FaultPoints = [
  /** The model's reply is committed; its tool calls have not run. */
  'after-reply-stored',
  /** A tool call ran; its result is not committed yet. */
  'before-tool-result-stored',
  /** A tool result is committed; the next model request has not been made. */
  'after-tool-result-stored',
  /** A step that took a steered message is committed; the next model request has not been made. */
  'after-steer-taken',
  /** A transfer call's result and `agent.changed` are committed; the run of the agent it was handed to has not begun. */
  'after-handoff-stored',
  /** An answer the output guard rejected to ask again (`answer.rejected`) is committed; the re-ask's model request has not been made. */
  'after-answer-rejected',
  /** A compaction's summary (`history.compacted`) is committed; the step's model request has not been made. */
  'after-compaction-stored',
  /** Events reached agent.events; the outbox rows are not marked published. */
  'after-publish',
  /** Inputs are in the event log; the Kafka offset is not committed. */
  'after-ingest',
  /** A schedule's firing (`schedule.fired` and its input) is committed; nothing after it has run (its turn has not started). */
  'after-firing-decided',
] as const;
export type FaultPoint = (typeof FaultPoints)[number];

function parse(variable: string, setting: string | undefined): Set<string> {
  const points = new Set((setting ?? '').split(',').map((p) => p.trim()).filter(Boolean));
  for (const point of points) {
    if (!(FaultPoints as readonly string[]).includes(point)) throw new Error(`${variable} names an unknown point: ${point}`);
  }
  return points;
}

export function faultPoints(settings: { crashAt?: string; pauseAt?: string }): (point: FaultPoint) => void {
  const crash = parse('CRASH_AT', settings.crashAt);
  const pause = parse('PAUSE_AT', settings.pauseAt);
  return (point) => {
    if (crash.has(point)) {
      process.stderr.write(`turn-worker: crashing at ${point} (CRASH_AT)\n`);
      process.kill(process.pid, 'SIGKILL');
    }
    if (pause.has(point)) {
      process.stderr.write(`turn-worker: pausing at ${point} (PAUSE_AT)\n`);
      process.kill(process.pid, 'SIGSTOP');
    }
  };
}
