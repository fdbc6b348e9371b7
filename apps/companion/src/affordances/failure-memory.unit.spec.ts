import { describe, expect, it } from 'vitest';
import { FailureMemory } from './failure-memory';
import { affordanceSettings } from './settings';

/** A memory on a clock that moves only when the test moves it. */
function memory(entries?: number) {
  const clock = { now: 1_000_000 };
  return { clock, failures: new FailureMemory({ firstMs: 5000, maxMs: 40_000 }, () => clock.now, entries) };
}

describe('remembered failures', () => {
  it('hold a position for 5 s after its first failure, then twice as long after each next one, at most the cap', () => {
    const { clock, failures } = memory();
    expect(failures.holds('c', 'followups', 7)).toBe(false);
    const held: number[] = [];
    for (let i = 0; i < 6; i++) {
      held.push(failures.failed('c', 'followups', 7));
      expect(failures.holds('c', 'followups', 7)).toBe(true);
      clock.now += held[i] - 1;
      expect(failures.holds('c', 'followups', 7)).toBe(true);
      clock.now += 1;
      expect(failures.holds('c', 'followups', 7)).toBe(false);
    }
    expect(held).toEqual([5000, 10_000, 20_000, 40_000, 40_000, 40_000]);
  });

  it('are per conversation, kind and position: a position that moved is asked about, and its first failure starts over', () => {
    const { failures } = memory();
    failures.failed('c', 'followups', 7);
    failures.failed('c', 'followups', 7);
    expect(failures.holds('c', 'recap', 7)).toBe(false);
    expect(failures.holds('d', 'followups', 7)).toBe(false);
    expect(failures.holds('c', 'followups', 9)).toBe(false);
    expect(failures.failed('c', 'followups', 9)).toBe(5000);
    expect(failures.holds('c', 'followups', 7)).toBe(false);
  });

  it('are forgotten on a success: the next failure is a first one', () => {
    const { failures } = memory();
    failures.failed('c', 'recap', 3);
    failures.failed('c', 'recap', 3);
    failures.succeeded('c', 'recap');
    expect(failures.holds('c', 'recap', 3)).toBe(false);
    expect(failures.failed('c', 'recap', 3)).toBe(5000);
  });

  it('are bounded: past the cap the one that failed least recently is forgotten', () => {
    const { failures } = memory(3);
    for (const key of ['a', 'b', 'c']) failures.failed(key, 'followups', 1);
    failures.failed('a', 'followups', 1); // a failed again: b is now the oldest
    failures.failed('d', 'followups', 1);
    expect(failures.size).toBe(3);
    expect(['a', 'b', 'c', 'd'].map((key) => failures.holds(key, 'followups', 1))).toEqual([true, false, true, true]);
  });

  it('are none with a first backoff of 0', () => {
    const failures = new FailureMemory({ firstMs: 0, maxMs: 0 });
    expect(failures.failed('c', 'followups', 1)).toBe(0);
    expect(failures.holds('c', 'followups', 1)).toBe(false);
    expect(failures.size).toBe(0);
  });

  it('are timed by AFFORDANCE_BACKOFF_MS (5 s) and AFFORDANCE_BACKOFF_MAX_MS (2 min); a cap below the first is refused', () => {
    const config = { OPENAI_MODEL: 'm' };
    expect(affordanceSettings(config, {}).backoff).toEqual({ firstMs: 5000, maxMs: 120_000 });
    expect(affordanceSettings(config, { AFFORDANCE_BACKOFF_MS: '1000', AFFORDANCE_BACKOFF_MAX_MS: '8000' }).backoff).toEqual({ firstMs: 1000, maxMs: 8000 });
    expect(() => affordanceSettings(config, { AFFORDANCE_BACKOFF_MS: '9000', AFFORDANCE_BACKOFF_MAX_MS: '8000' })).toThrow(/AFFORDANCE_BACKOFF_MAX_MS/);
    expect(() => affordanceSettings(config, { AFFORDANCE_BACKOFF_MS: '-1' })).toThrow(/AFFORDANCE_BACKOFF_MS/);
  });
});
