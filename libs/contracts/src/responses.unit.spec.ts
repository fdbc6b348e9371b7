import { describe, expect, it } from 'vitest';
import { approvalResponses, CreateResponseBody, inputTexts } from './responses';

/** A create's body is a stranger's: every field it accepts, used or not, is bounded. */
describe('a Responses create body', () => {
  const ok = { model: 'default', input: 'hello' };
  const refused = (extra: Record<string, unknown>) => !CreateResponseBody.safeParse({ ...ok, ...extra }).success;

  it('accepts what the openai client sends', () => {
    expect(CreateResponseBody.safeParse({ ...ok, user: 'u-1', truncation: 'auto', include: ['message.output_text.logprobs'], service_tier: 'auto', conversation: 'user-1/trip' }).success).toBe(true);
  });

  it('refuses the fields it ignores when they are past their bounds, and a conversation that is no conversation key', () => {
    expect(refused({ user: 'x'.repeat(257) })).toBe(true);
    expect(refused({ safety_identifier: 'x'.repeat(257) })).toBe(true);
    expect(refused({ prompt_cache_key: 'x'.repeat(257) })).toBe(true);
    expect(refused({ service_tier: 'x'.repeat(65) })).toBe(true);
    expect(refused({ truncation: 'whatever' })).toBe(true);
    expect(refused({ include: Array.from({ length: 17 }, () => 'a') })).toBe(true);
    expect(refused({ include: ['x'.repeat(129)] })).toBe(true);
    expect(refused({ conversation: 'a b' })).toBe(true);
    expect(refused({ conversation: { id: 'x'.repeat(201) } })).toBe(true);
  });

  it('takes mcp_approval_response items, bounded, and not mixed with messages', () => {
    const item = { type: 'mcp_approval_response', approval_request_id: 'appr_1', approve: false, reason: 'no' };
    const body = CreateResponseBody.parse({ ...ok, input: [item] });
    expect(approvalResponses(body.input)).toEqual([item]);
    expect(inputTexts(body.input)).toEqual([]);
    expect(approvalResponses(CreateResponseBody.parse(ok).input)).toBeNull();
    expect(refused({ input: [{ ...item, approve: 'yes' }] })).toBe(true);
    expect(refused({ input: [{ ...item, approval_request_id: 'a b' }] })).toBe(true);
    expect(refused({ input: [{ ...item, reason: 'x'.repeat(2001) }] })).toBe(true);
    expect(refused({ input: [{ ...item, extra: 1 }] })).toBe(true);
    expect(refused({ input: [item, { role: 'user', content: 'and this' }] })).toBe(true);
  });
});
