import type { Config, Log } from '@rudder/runtime';
import { describe, expect, it, vi } from 'vitest';
import { Positions } from '../consistency/positions';
import { Announcements, announcedHead } from './announcements';
import type { LiveEvents } from './live-events';

const at = '2026-01-01T00:00:00.000Z';
/** As PostgreSQL's json_build_object writes it (`"key" : value`). */
const payload = (conversation: string, events: string, last = 1) => `{"conversation" : ${JSON.stringify(conversation)}, "last" : ${last}, "after" : 0, "events" : ${events}}`;
const event = (conversation: string) =>
  JSON.stringify([{ v: 1, id: '00000000-0000-4000-8000-000000000001', conversation, position: 1, at, type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } }]);

function announcements(followed: string[]) {
  const noticed: unknown[] = [];
  const live = { follows: (c: string) => followed.includes(c), noticed: (a: unknown) => noticed.push(a) } as unknown as LiveEvents;
  const warn = vi.fn();
  const log = { warn, info: vi.fn(), error: vi.fn(), debug: vi.fn() } as unknown as Log;
  const positions = new Positions();
  const listener = new Announcements({ KAFKA_NAMESPACE: 'spec.' } as Config, live, log, positions);
  return { take: (text: string) => listener['take'](text), noticed, warn, positions };
}

describe('announcements a gateway hears', () => {
  it("names the conversation and its last position from the payload's start, escapes included; anything else is left to the whole parse", () => {
    expect(announcedHead(payload('user-42/trip', '[]', 42))).toEqual({ conversation: 'user-42/trip', last: 42 });
    expect(announcedHead(payload('a "quoted" \\ key', '[]'))).toEqual({ conversation: 'a "quoted" \\ key', last: 1 });
    expect(announcedHead('{"conversation":"c1","last":7}')).toEqual({ conversation: 'c1', last: 7 });
    // An older writer's (no `last`), or one not a plain position: the conversation alone.
    expect(announcedHead('{"conversation":"c1","after":0}')).toEqual({ conversation: 'c1' });
    expect(announcedHead('{"conversation" : "c1", "last" : 1e99, "after" : 0}')).toEqual({ conversation: 'c1' });
    expect(announcedHead('{"conversation" : "c1", "last" : 12345678901234567, "after" : 0}')).toEqual({ conversation: 'c1' });
    expect(announcedHead('{"conversation" : "c1", "last" : -3, "after" : 0}')).toEqual({ conversation: 'c1' });
    expect(announcedHead('{"after" : 0, "conversation" : "c1", "last" : 5}')).toEqual({});
    expect(announcedHead('not json')).toEqual({});
    expect(announcedHead('{"conversation" : 5, "last" : 5}')).toEqual({});
  });

  it('notes the last position of every announcement as produced, of a conversation followed here or not', () => {
    const { take, positions } = announcements(['followed']);
    take(payload('elsewhere', event('elsewhere'), 40));
    expect(positions.produced.highest).toBe(40);
    take(payload('followed', event('followed'), 41));
    expect(positions.produced.highest).toBe(41);
    take(payload('elsewhere', '[{"broken', 39));
    expect(positions.produced.highest).toBe(41);
  });

  it("one of a conversation nobody here follows is not parsed past its key; one followed is parsed, checked and handed out", () => {
    const { take, noticed, warn } = announcements(['followed']);
    // The same broken tail: dropped unread when not followed, logged when followed.
    take(payload('elsewhere', '[{"broken'));
    expect(warn).not.toHaveBeenCalled();
    take(payload('followed', '[{"broken'));
    expect(warn).toHaveBeenCalledTimes(1);
    take(payload('followed', event('followed')));
    expect(noticed).toHaveLength(1);
    take(payload('elsewhere', event('elsewhere')));
    expect(noticed).toHaveLength(1);
  });
});
