/**
 * Points at which a worker kills itself with SIGKILL when `CRASH_AT` names them, so the
 * fault tests can stop a real process at an exact place and check that another finishes
 * its work exactly once. `CRASH_AT` may name several points, comma-separated.
 */
export const CrashPoints = [
  /** The model's reply is committed; its tool calls have not run. */
  'after-reply-stored',
  /** A tool result is committed; the next model request has not been made. */
  'after-tool-result-stored',
  /** A step that took a steered message is committed; the next model request has not been made. */
  'after-steer-taken',
  /** Events reached agent.events; the outbox rows are not marked published. */
  'after-publish',
  /** Inputs are in the event log; the Kafka offset is not committed. */
  'after-ingest',
] as const;
export type CrashPoint = (typeof CrashPoints)[number];

export function crashPoints(setting: string | undefined): (point: CrashPoint) => void {
  const armed = new Set((setting ?? '').split(',').map((p) => p.trim()).filter(Boolean));
  for (const point of armed) {
    if (!(CrashPoints as readonly string[]).includes(point)) throw new Error(`CRASH_AT names an unknown point: ${point}`);
  }
  return (point) => {
    if (armed.has(point)) {
      process.stderr.write(`turn-worker: crashing at ${point} (CRASH_AT)\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  };
}
