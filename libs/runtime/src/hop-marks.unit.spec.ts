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
});
