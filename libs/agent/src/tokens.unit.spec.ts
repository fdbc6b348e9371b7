import { describe, expect, it, vi } from 'vitest';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { contextBudget, fitRequest } from './context';
import { assistantMessage, toolMessage, userMessage } from './messages';
import { waitTool } from './tools';

// The tokenizer, watched: how many texts each request makes it encode.
vi.mock('gpt-tokenizer/encoding/o200k_base', async (importOriginal) => {
  const actual = await importOriginal<typeof import('gpt-tokenizer/encoding/o200k_base')>();
  return { ...actual, encode: vi.fn(actual.encode) };
});
const encoded = () => vi.mocked(encode).mock.calls.length;

describe('counting a request’s tokens', () => {
  it('counts each message once, when a request is first built with it: later requests count only what is new', () => {
    const earlier = Array.from({ length: 30 }, (_, i) => ({ messages: [userMessage(`question ${i}`), assistantMessage(`answer ${i}`, [])] }));
    let turn = [userMessage('look it up'), assistantMessage('', [{ id: 'c1', name: 'wait', arguments: '{"ms":1}' }]), toolMessage('c1', 'waited 1 ms')];
    const budget = contextBudget({ maxTokens: 100_000 });
    const tools = [waitTool]; // an agent's tools: one list, made once
    const request = () => fitRequest({ systemPrompt: 'be brief', summary: null, tools, earlier, turn }, budget);

    expect(request().fits).toBe(true);
    const first = encoded();
    expect(first).toBeGreaterThan(60); // every message, the system prompt, the tools

    expect(request().fits).toBe(true);
    expect(encoded()).toBe(first); // the same request again: nothing counted

    // The next step: the fold's new turn holds the same messages and one more; only that one is counted.
    turn = [...turn, userMessage('steered in after the result')];
    expect(request().fits).toBe(true);
    expect(encoded()).toBe(first + 1);
  });
});
