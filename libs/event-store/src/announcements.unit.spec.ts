import { describe, expect, it } from 'vitest';
import type { ConversationEvent } from '@rudder/contracts';
import { announcements } from './append-to-conversations';

const event = (position: number, text: string): ConversationEvent => ({
  v: 1,
  id: `e${position}`,
  conversation: 'c',
  position,
  at: '2026-12-04T00:00:00.000Z',
  type: 'steer.accepted',
  data: { input: { id: `s${position}`, text }, turn: 't', landed: true },
});

describe('announced decisions', () => {
  it('are packed in order into JSON arrays under the notification limit; one larger than a payload alone is left to agent.events', () => {
    const events = [event(1, 'a'), event(2, 'x'.repeat(4000)), event(3, 'y'.repeat(4000)), event(4, 'z'.repeat(9000)), event(5, 'b')];
    const payloads = announcements(events);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    const positions = payloads.flatMap((p) => (JSON.parse(p) as ConversationEvent[]).map((e) => e.position));
    expect(positions).toEqual([1, 2, 3, 5]);
    expect(payloads.length).toBe(2);
    expect(announcements([])).toEqual([]);
  });
});
