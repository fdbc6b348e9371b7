import type { Config, Log } from '@rudder/runtime';
import { describe, expect, it, vi } from 'vitest';
import { Announcements, conversationNamed } from './announcements';
import type { LiveEvents } from './live-events';

const at = '2026-01-01T00:00:00.000Z';
/** As PostgreSQL's json_build_object writes it (`"key" : value`). */
const payload = (conversation: string, events: string) => `{"conversation" : ${JSON.stringify(conversation)}, "after" : 0, "events" : ${events}}`;
const event = (conversation: string) =>
  JSON.stringify([{ v: 1, id: '00000000-0000-4000-8000-000000000001', conversation, position: 1, at, type: 'conversation.opened', data: { owner: 'alice', agent: 'default' } }]);

function announcements(followed: string[]) {
  const noticed: unknown[] = [];
  const live = { follows: (c: string) => followed.includes(c), noticed: (a: unknown) => noticed.push(a) } as unknown as LiveEvents;
  const warn = vi.fn();
  const log = { warn, info: vi.fn(), error: vi.fn(), debug: vi.fn() } as unknown as Log;
  const listener = new Announcements({ KAFKA_NAMESPACE: 'spec.' } as Config, live, log);
  return { take: (text: string) => listener['take'](text), noticed, warn };
}

describe('announcements a gateway hears', () => {
  it("names the conversation from the payload's start, escapes included; anything else is left to the whole parse", () => {
    expect(conversationNamed(payload('user-42/trip', '[]'))).toBe('user-42/trip');
    expect(conversationNamed(payload('a "quoted" \\ key', '[]'))).toBe('a "quoted" \\ key');
    expect(conversationNamed('{"conversation":"c1","after":0}')).toBe('c1');
    expect(conversationNamed('{"after" : 0, "conversation" : "c1"}')).toBeUndefined();
    expect(conversationNamed('not json')).toBeUndefined();
    expect(conversationNamed('{"conversation" : 5}')).toBeUndefined();
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
