import { ChatBody } from '@rudder/contracts';
import { describe, expect, it, vi } from 'vitest';
import type { ConversationAccess } from '../companion/conversation-access';
import { GatewayError } from '../errors/gateway-error';
import type { Decisions } from '../writes/decisions';
import { admitMessage, messageAnswers, type MessageBody } from './message';

/** A chat's or a steer's checks in their order, and how a refusal and a late decision are answered. */
const CHAT: MessageBody<ChatBody> = {
  schema: ChatBody,
  what: 'chat body',
  texts: (body) => (body.text !== undefined ? [['text', body.text]] : (body.messages ?? []).map((text, i) => [`messages.${i}`, text] as const)),
};

function accessRefusing(refuse: boolean) {
  const mayWrite = vi.fn(async () => {
    if (refuse) throw new GatewayError('forbidden', 'not yours');
  });
  return { access: { mayWrite } as unknown as ConversationAccess, mayWrite };
}
const request = (body: unknown, idempotencyKey?: string) => ({ key: 'c-1', subject: 'alice', body, idempotencyKey });
const codeOf = (promise: Promise<unknown>) => promise.then(() => 'admitted', (error: GatewayError) => error.code);

describe('admitMessage', () => {
  it('admits a body its schema takes, under the client id or a fresh one, once the sender may write', async () => {
    const { access, mayWrite } = accessRefusing(false);
    const withId = await admitMessage(request({ text: ' hi ', id: 'i-1' }), CHAT, 10, access);
    expect(withId).toEqual({ body: { text: 'hi', id: 'i-1' }, sender: { id: 'i-1', key: 'c-1', subject: 'alice' }, idFromClient: true });
    expect(mayWrite).toHaveBeenCalledWith('c-1', 'alice');
    expect((await admitMessage(request({ text: 'hi' }, 'i-2'), CHAT, 10, access)).sender.id).toBe('i-2');
    const fresh = await admitMessage(request({ text: 'hi' }), CHAT, 10, access);
    expect(fresh.idFromClient).toBe(false);
    expect(fresh.sender.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await admitMessage(request({ text: 'hi' }), CHAT, 10, access)).sender.id).not.toBe(fresh.sender.id);
  });

  it('checks in order — a JSON body (400), its schema (400), each text’s length (413), one id (400) — before asking for write access (403)', async () => {
    const { access, mayWrite } = accessRefusing(true);
    expect(await codeOf(admitMessage(request(undefined), CHAT, 10, access))).toBe('bad_request');
    expect(await codeOf(admitMessage(request({ text: '' }), CHAT, 10, access))).toBe('bad_request');
    expect(await codeOf(admitMessage(request({ messages: ['short', 'x'.repeat(11)] }), CHAT, 10, access))).toBe('text_too_long');
    await expect(admitMessage(request({ messages: ['short', 'x'.repeat(11)] }), CHAT, 10, access)).rejects.toThrow(/^messages\.1 has 11 characters/);
    expect(await codeOf(admitMessage(request({ text: 'hi', id: 'i-1' }, 'i-2'), CHAT, 10, access))).toBe('bad_request');
    expect(mayWrite).not.toHaveBeenCalled();
    expect(await codeOf(admitMessage(request({ text: 'x'.repeat(10) }), CHAT, 10, access))).toBe('forbidden');
    expect(mayWrite).toHaveBeenCalledTimes(1);
  });
});

describe('messageAnswers', () => {
  it('answers a refusal by the decisions’ rejection of the input, of its kind', async () => {
    const answer = new GatewayError('conflict', 'busy');
    const rejected = vi.fn(async () => answer);
    const { refused } = messageAnswers('steer', { rejected } as unknown as Decisions);
    const steer = { v: 1, type: 'steer', id: 'i-1', conversation: 'c-1', subject: 'alice', text: 'go on', sentAt: '2025-01-01T00:00:00Z' } as const;
    expect(await refused({ code: 'busy', message: 'a turn runs' }, steer)).toBe(answer);
    expect(rejected).toHaveBeenCalledWith('c-1', { id: 'i-1', kind: 'steer' }, { code: 'busy', message: 'a turn runs' });
  });

  it('answers a decision not made in time with 503, naming the id to send again', () => {
    const { late } = messageAnswers('chat', {} as Decisions);
    const chat = { v: 1, type: 'chat', id: 'i-9', conversation: 'c-1', subject: 'alice', messages: ['hi'], onBusy: 'enqueue', sentAt: '2025-01-01T00:00:00Z' } as const;
    const error = late({ ...chat, messages: [...chat.messages] }, 30);
    expect([error.code, error.message, error.details]).toEqual([
      'unavailable',
      'chat i-9 was sent, but the worker has not decided on it within 30 s; retry with the same id (i-9) to get its answer: it will not be sent twice',
      { id: 'i-9' },
    ]);
  });
});
