import fs from 'node:fs';
import path from 'node:path';

/**
 * Marks of the hops an input takes through the services, for measuring where a decision's or a
 * turn's time goes (`bench/turn-timeline.mjs`, docs/performance.md "How to measure"). Off unless
 * `RUDDER_HOP_MARKS_DIR` names a directory when the process starts: then `hop(name)` notes the
 * name with the machine's monotonic clock (`process.hrtime`, the same in every process of the
 * machine), and the notes are appended to `<dir>/<pid>` every 250 ms and at exit, one
 * `<name> <ms>` line each. Off, `hop` does nothing but return.
 */
export type HopMarks = {
  hop(name: string): void;
  /** Appends what was noted since the last flush (called on a timer and at exit). */
  flush(): void;
};

export function createHopMarks(dir: string | undefined, file = String(process.pid)): HopMarks {
  if (!dir) return { hop: () => undefined, flush: () => undefined };
  const to = path.join(dir, file);
  /** What was noted since the last flush; null once a flush failed (marks are off from then on). */
  let lines: string[] | null = [];
  let made = false;
  return {
    hop: (name) => void lines?.push(`${name} ${Number(process.hrtime.bigint()) / 1e6}`),
    flush: () => {
      if (!lines?.length) return;
      const written = lines;
      lines = [];
      try {
        if (!made) {
          fs.mkdirSync(dir, { recursive: true });
          made = true;
        }
        fs.appendFileSync(to, `${written.join('\n')}\n`);
      } catch (error) {
        // A measurement aid never stops a service: it says so once and notes nothing more.
        process.stderr.write(`hop marks off: ${to} cannot be written (${String(error)})\n`);
        lines = null;
      }
    },
  };
}

const marks = createHopMarks(process.env.RUDDER_HOP_MARKS_DIR);
if (process.env.RUDDER_HOP_MARKS_DIR) {
  setInterval(marks.flush, 250).unref();
  process.on('exit', marks.flush);
}

/** Notes that this process reached hop `name` now (nothing when hop marks are off). */
export const hop = marks.hop;
