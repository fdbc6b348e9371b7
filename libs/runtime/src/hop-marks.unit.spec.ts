import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHopMarks } from './hop-marks';

describe('hop marks', () => {
  it('note each hop with the monotonic clock, in order, and append them to the process file at each flush', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hop-marks-'));
    const marks = createHopMarks(dir, 'worker-1');
    const before = Number(process.hrtime.bigint()) / 1e6;
    marks.hop('worker.input-batch');
    marks.hop('worker.ingest-sent');
    marks.flush();
    marks.hop('worker.committed');
    marks.flush();
    marks.flush(); // nothing new: nothing appended
    const after = Number(process.hrtime.bigint()) / 1e6;
    const lines = fs.readFileSync(path.join(dir, 'worker-1'), 'utf8').trimEnd().split('\n').map((l) => l.split(' '));
    expect(lines.map(([name]) => name)).toEqual(['worker.input-batch', 'worker.ingest-sent', 'worker.committed']);
    const times = lines.map(([, ms]) => Number(ms));
    expect(times.every((t) => t >= before && t <= after)).toBe(true);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('make the directory they are written to, and once it cannot be written, say so and note nothing more', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'hop-marks-'));
    const made = createHopMarks(path.join(root, 'not', 'yet'), 'gateway-1');
    made.hop('gateway.request');
    made.flush();
    expect(fs.readFileSync(path.join(root, 'not', 'yet', 'gateway-1'), 'utf8')).toMatch(/^gateway\.request \d+(\.\d+)?\n$/);

    const blocked = path.join(root, 'a-file');
    fs.writeFileSync(blocked, '');
    const said: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string) => (said.push(String(chunk)), true)) as typeof process.stderr.write;
    try {
      const marks = createHopMarks(blocked, 'worker-1'); // a file where the directory should be
      marks.hop('worker.commit');
      marks.flush();
      marks.hop('worker.committed');
      marks.flush();
    } finally {
      process.stderr.write = write;
    }
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/^hop marks off: .*worker-1 cannot be written/);
  });
});
