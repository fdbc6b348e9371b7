import { describe, expect, it } from 'vitest';
import { limitSettings, SubjectLimits } from './subject-limits';

const limited = expect.objectContaining({ code: 'rate_limited', status: 429 });

describe('SubjectLimits', () => {
  it('lets a subject send its burst, then one input per 1/rate seconds, and tells how long to wait', () => {
    let now = 0;
    const limits = new SubjectLimits({ LIMIT_INPUTS_PER_SECOND: 2, LIMIT_INPUTS_BURST: 3, LIMIT_STREAMS_PER_SUBJECT: 0 }, () => now);
    for (let i = 0; i < 3; i++) limits.takeInput('alice');
    let refusal: unknown;
    try {
      limits.takeInput('alice');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toEqual(limited);
    expect(refusal).toMatchObject({ headers: { 'retry-after': '1' }, details: { limit: 'inputs', retryAfter: 1 } });
    now += 500; // one token back at 2/s
    limits.takeInput('alice');
    expect(() => limits.takeInput('alice')).toThrow(limited);
  });

  it('one subject over its rate leaves every other subject its own', () => {
    const limits = new SubjectLimits({ LIMIT_INPUTS_PER_SECOND: 1, LIMIT_STREAMS_PER_SUBJECT: 0 }, () => 0);
    limits.takeInput('alice');
    limits.takeInput('alice');
    expect(() => limits.takeInput('alice')).toThrow(limited);
    limits.takeInput('bob');
    limits.takeInput('bob');
  });

  it('counts open streams per subject; a release (once, however often called) frees a slot', () => {
    const limits = new SubjectLimits({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 2 });
    const first = limits.openStream('alice');
    limits.openStream('alice');
    expect(() => limits.openStream('alice')).toThrow(limited);
    limits.openStream('bob');
    first();
    first();
    expect(limits.streamsOf('alice')).toBe(1);
    limits.openStream('alice');
    expect(() => limits.openStream('alice')).toThrow(limited);
  });

  it('reads have a bucket of their own: a subject out of reads may still send inputs, and the other way round', () => {
    const limits = new SubjectLimits({ LIMIT_INPUTS_PER_SECOND: 1, LIMIT_INPUTS_BURST: 1, LIMIT_STREAMS_PER_SUBJECT: 0, LIMIT_READS_PER_SECOND: 1, LIMIT_READS_BURST: 2 }, () => 0);
    limits.takeRead('alice');
    limits.takeRead('alice');
    expect(() => limits.takeRead('alice')).toThrow(expect.objectContaining({ code: 'rate_limited', details: { limit: 'reads', retryAfter: 1 } }));
    limits.takeInput('alice');
    expect(() => limits.takeInput('alice')).toThrow(limited);
    limits.takeRead('bob');
  });

  it('0 turns a limit off', () => {
    const limits = new SubjectLimits({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 0 }, () => 0);
    for (let i = 0; i < 1000; i++) {
      limits.takeInput('alice');
      limits.openStream('alice');
    }
  });
});

describe('limitSettings', () => {
  it('takes what is set, in open development mode too', () => {
    const set = { LIMIT_INPUTS_PER_SECOND: 5, LIMIT_INPUTS_BURST: 7, LIMIT_STREAMS_PER_SUBJECT: 3 };
    expect(limitSettings(set, true)).toEqual({ ...set, LIMIT_READS_PER_SECOND: 0 });
    expect(limitSettings(set, false)).toEqual({ ...set, LIMIT_READS_PER_SECOND: 100 });
    const reads = { ...set, LIMIT_READS_PER_SECOND: 7, LIMIT_READS_BURST: 9 };
    expect(limitSettings(reads, true)).toEqual(reads);
    expect(limitSettings({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 0 }, false)).toMatchObject({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_STREAMS_PER_SUBJECT: 0 });
  });

  it('unset: the defaults where requests are authenticated, no limit in open development mode', () => {
    expect(limitSettings({}, false)).toEqual({ LIMIT_INPUTS_PER_SECOND: 50, LIMIT_INPUTS_BURST: undefined, LIMIT_STREAMS_PER_SUBJECT: 32, LIMIT_READS_PER_SECOND: 100 });
    expect(limitSettings({}, true)).toEqual({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_INPUTS_BURST: undefined, LIMIT_STREAMS_PER_SUBJECT: 0, LIMIT_READS_PER_SECOND: 0 });
    expect(limitSettings({ LIMIT_STREAMS_PER_SUBJECT: 4 }, true)).toEqual({ LIMIT_INPUTS_PER_SECOND: 0, LIMIT_INPUTS_BURST: undefined, LIMIT_STREAMS_PER_SUBJECT: 4, LIMIT_READS_PER_SECOND: 0 });
  });
});
