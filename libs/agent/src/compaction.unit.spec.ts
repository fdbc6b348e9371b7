import { describe, expect, it } from 'vitest';
import { storedSummary, summaryRequest } from './compaction';
import { assistantMessage, toolMessage, userMessage, type ModelMessage } from './messages';
import { countRequest } from './tokens';

const turn = (i: number, words = 40) => ({ messages: [userMessage(`question ${i} `.repeat(words)), assistantMessage(`answer ${i}`, [])] });

describe('the summary request (summaryRequest)', () => {
  it('is the summary prompt and one user message with the summary so far and the oldest turns that fit, each message a paragraph; no tools', () => {
    const turns = [turn(0, 2), turn(1, 2)];
    const request = summaryRequest('Summarise.', 'They met.', turns, 10_000);
    expect(request.covers).toBe(2);
    expect(request.messages).toEqual([
      { role: 'system', content: 'Summarise.' },
      { role: 'user', content: 'The summary so far:\nThey met.\n\nThe conversation after it:\n\nUser: question 0 question 0 \n\nAssistant: answer 0\n\nUser: question 1 question 1 \n\nAssistant: answer 1' },
    ]);
    expect(summaryRequest('Summarise.', null, turns, 10_000).messages[1].content).toMatch(/^The conversation so far:\n\nUser: question 0/);
  });

  it('covers the oldest turns that fit its budget, and at least one, cut to fit: it never passes maxTokens', () => {
    const turns = Array.from({ length: 10 }, (_, i) => turn(i));
    for (const maxTokens of [60, 200, 500, 1000]) {
      const request = summaryRequest('Summarise.', null, turns, maxTokens);
      expect(countRequest(request.messages, [])).toBeLessThanOrEqual(maxTokens);
      expect(request.covers).toBeGreaterThanOrEqual(1);
      expect(request.covers).toBeLessThan(10);
      const content = request.messages[1].content;
      expect(content).toContain('question 0');
      expect(content).not.toContain(`answer ${request.covers}`);
    }
  });

  it('shows what was said, never a tool call or its result', () => {
    const messages: ModelMessage[] = [userMessage('look'), assistantMessage('looking', [{ id: 'c', name: 'look', arguments: '{}' }]), toolMessage('c', 'secret result'), assistantMessage('found it', [])];
    const content = summaryRequest('Summarise.', null, [{ messages }], 10_000).messages[1].content;
    expect(content).toBe('The conversation so far:\n\nUser: look\n\nAssistant: looking\n\nAssistant: found it');
    // A reply that said nothing (only calls, or blanks) is no paragraph.
    const silent: ModelMessage[] = [userMessage('look'), assistantMessage('', [{ id: 'c', name: 'look', arguments: '{}' }]), assistantMessage(' \n ', []), assistantMessage('found it', [])];
    expect(summaryRequest('Summarise.', null, [{ messages: silent }], 10_000).messages[1].content).toBe('The conversation so far:\n\nUser: look\n\nAssistant: found it');
  });

  it('takes a turn that fits its budget exactly; past the turns that fit, none is cut in; its tokens are those it sends', () => {
    const turns = [turn(0, 5), turn(1, 5), turn(2, 5)];
    const two = summaryRequest('Summarise.', null, turns.slice(0, 2), 10_000);
    // The budget of exactly those two turns: they fit, the third does not, and nothing of it is in.
    const exact = summaryRequest('Summarise.', null, turns, two.tokens);
    expect(exact.covers).toBe(2);
    expect(exact.messages).toEqual(two.messages);
    expect(exact.tokens).toBe(two.tokens);
    const tight = summaryRequest('Summarise.', null, turns, two.tokens + 10);
    expect(tight.covers).toBe(2);
    expect(tight.messages[1].content).not.toContain('question 2');
    // One turn alone over the budget is cut to fit, and counted as it is sent.
    const cut = summaryRequest('Summarise.', null, [turn(0)], 60);
    expect(cut.covers).toBe(1);
    expect(cut.tokens).toBeGreaterThan(60 - 5);
    expect(cut.tokens).toBeLessThanOrEqual(60);
    expect(Math.abs(cut.tokens - countRequest(cut.messages, []))).toBeLessThanOrEqual(1);
  });

  it('a stored summary is the answer trimmed, cut at its limit', () => {
    expect(storedSummary('  short  ', 100)).toEqual({ summary: 'short', tokens: 1 });
    const long = storedSummary('word '.repeat(500), 50);
    expect(long.tokens).toBe(50);
    expect(long.summary.length).toBeLessThan(500);
  });
});
