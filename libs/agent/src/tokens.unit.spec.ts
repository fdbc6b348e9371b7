import { describe, expect, it, vi } from 'vitest';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { contextBudget, fitRequest } from './context';
import { assistantMessage, toolMessage, userMessage, type ModelMessage } from './messages';
import { countMessage, countRequest, firstTokens, knownContentTokens, knownTokens, messageTokens, textTokens, toolsTokens } from './tokens';
import { toolSpec, waitTool } from './tools';

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

describe('the count of a text, a message and a request', () => {
  const n = (text: string) => encode(text).length;

  it('an empty text is 0 tokens, without asking the tokenizer', () => {
    const before = encoded();
    expect(textTokens('')).toBe(0);
    expect(encoded()).toBe(before);
  });

  it('the first tokens of a text: the text itself when it has no more (even one the tokenizer would not give back as it was), else its cut', () => {
    const lone = '\uD800abc'; // a lone surrogate: decoding its tokens gives U+FFFD in its place
    expect(n(lone)).toBe(2);
    expect(firstTokens(lone, 2)).toEqual({ text: lone, of: 2 });
    expect(firstTokens(lone, 3)).toEqual({ text: lone, of: 2 });
    expect(firstTokens(lone, 1)).toEqual({ text: '\uFFFD', of: 2 });
  });

  const calls = [
    { id: 'call-1', name: 'search', arguments: '{"q":"weather in Oslo"}' },
    { id: 'call-2', name: 'wait', arguments: '{"ms":10}' },
  ];
  it.each<[string, ModelMessage, () => number]>([
    ['a user’s message: framing and content', userMessage('what is the weather'), () => 3 + n('what is the weather')],
    ['the system prompt: framing and content', { role: 'system', content: 'be brief' }, () => 3 + n('be brief')],
    ['a reply without calls: framing and content', assistantMessage('sunny', []), () => 3 + n('sunny')],
    [
      'a reply with calls: and each call’s framing, id, name and arguments',
      assistantMessage('checking', calls),
      () => 3 + n('checking') + calls.reduce((sum, c) => sum + 3 + n(c.id) + n(c.name) + n(c.arguments), 0),
    ],
    ['a tool’s result: and the id of its call', toolMessage('call-1', 'rain'), () => 3 + n('rain') + n('call-1')],
  ])('%s', (_, message, expected) => {
    expect(countMessage(message)).toBe(expected());
  });

  it('a message’s counts are known once it was counted, not before', () => {
    const message = toolMessage('call-9', 'a result');
    expect(knownTokens(message)).toBeUndefined();
    expect(knownContentTokens(message)).toBeUndefined();
    expect(messageTokens(message)).toBe(countMessage(message));
    expect(knownTokens(message)).toBe(countMessage(message));
    expect(knownContentTokens(message)).toBe(n('a result'));
  });

  it('a request: the reply’s priming, its messages, and its tools’ JSON when it has tools (none without)', () => {
    const messages = [userMessage('wait a bit'), assistantMessage('', [calls[1]])];
    const sum = 3 + countMessage(messages[0]) + countMessage(messages[1]);
    const tools = n(JSON.stringify([toolSpec(waitTool)]));
    expect(countRequest(messages, [])).toBe(sum);
    expect(countRequest([], [])).toBe(3);
    expect(countRequest(messages, [waitTool])).toBe(sum + tools);
    expect(toolsTokens([])).toBe(0);
    expect(toolsTokens([waitTool])).toBe(tools);
  });
});
