import { describe, expect, it } from 'vitest';
import { NO_CONTEXT } from '@rudder/contracts';
import type { CompanionStatus } from '../../companion/companion-client';
import { positionOf } from './chat';

const status = (running: boolean, queue: string[]): CompanionStatus => ({
  key: 'k',
  running: running ? { turn: 't', startedAt: '2026-01-01T00:00:00.000Z' } : null,
  steering: [],
  queue: queue.map((id) => ({ id, kind: 'chat', text: id, revision: 0 })),
  lastInputId: queue.at(-1) ?? null,
  context: NO_CONTEXT,
  agent: 'default',
  grants: [],
  todos: [],
  schedules: [],
  awaiting: [],
  heldUntil: null,
  owner: null,
  position: 0,
});

describe('position of a chat sent again', () => {
  it('an input sent again has what is ahead of it now, and 0 once it is no longer pending', () => {
    expect(positionOf('b', status(true, ['a', 'b']))).toBe(2);
    expect(positionOf('a', status(false, ['a', 'b']))).toBe(0);
    expect(positionOf('gone', status(true, ['a']))).toBe(0);
    expect(positionOf('x', null)).toBe(0);
  });
});
