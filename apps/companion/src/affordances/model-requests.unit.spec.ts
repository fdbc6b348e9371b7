import { describe, expect, it } from 'vitest';
import { affordanceAsked, affordanceTranscript, type ModelRequest } from '@rudder/scripted-model';
import { affordanceRequest, parseAnswer } from './model-requests';
import { DEFAULT_FOLLOWUPS_PROMPT, DEFAULT_RECAP_PROMPT } from './settings';

const transcript = [
  { role: 'user' as const, text: 'plan a trip to Lisbon' },
  { role: 'assistant' as const, text: 'Here is a plan.' },
];
const asModelRequest = (messages: ReturnType<typeof affordanceRequest>): Pick<ModelRequest, 'body'> => ({ body: { model: 'm', messages } });

describe('an affordance request', () => {
  it('is its prompt with the answer shape, then the transcript oldest first; the scripted model knows it by its prompt, also a configured one', () => {
    const followups = affordanceRequest('followups', DEFAULT_FOLLOWUPS_PROMPT, transcript);
    expect(followups).toEqual([
      { role: 'system', content: `${DEFAULT_FOLLOWUPS_PROMPT}\n\nAnswer with JSON only, in this shape: {"suggestions": ["<message>", "<message>"]}` },
      { role: 'user', content: 'The conversation so far, oldest first:\n\nUser: plan a trip to Lisbon\n\nAssistant: Here is a plan.' },
    ]);
    expect(affordanceAsked(asModelRequest(followups))).toBe('followups');
    expect(affordanceTranscript(asModelRequest(followups))).toEqual(transcript);
    expect(affordanceAsked(asModelRequest(affordanceRequest('recap', DEFAULT_RECAP_PROMPT, transcript)))).toBe('recap');
    expect(affordanceAsked(asModelRequest(affordanceRequest('recap', 'Say where we were.', transcript)))).toBe('recap');
  });

  it("shows a person's decision on a tool call as a tool approval", () => {
    const decided = [...transcript, { role: 'approval' as const, text: 'denied send_email: wrong person' }];
    expect(affordanceRequest('recap', 'p', decided)[1].content).toBe(
      'The conversation so far, oldest first:\n\nUser: plan a trip to Lisbon\n\nAssistant: Here is a plan.\n\nTool approval: denied send_email: wrong person',
    );
  });

  it('keeps the newest messages within its budget, each cut to 2,000 characters', () => {
    const long = Array.from({ length: 30 }, (_, i) => ({ role: 'user' as const, text: `${i}:${'x'.repeat(3000)}` }));
    const shown = String(affordanceRequest('recap', 'p', long)[1].content);
    expect(shown.length).toBeLessThan(17_000);
    expect(shown).toContain('29:');
    expect(shown).not.toContain('User: 0:');
    expect(shown).toContain('x […]');
  });
});

describe('the answer', () => {
  it('of followups: the JSON asked for (or a bare list, or fenced), trimmed, without repeats, empty or long ones, at most 5', () => {
    expect(parseAnswer('followups', '{"suggestions": [" Book it ", "Book it", "", "a", "b", "c", "d", "e"]}')).toEqual({ kind: 'followups', suggestions: ['Book it', 'a', 'b', 'c', 'd'] });
    expect(parseAnswer('followups', '```json\n["What next?"]\n```')).toEqual({ kind: 'followups', suggestions: ['What next?'] });
    expect(parseAnswer('followups', `{"suggestions": ["${'y'.repeat(201)}", 7, "ok"]}`)).toEqual({ kind: 'followups', suggestions: ['ok'] });
  });

  it('is garbage (null) when it is not the JSON asked for, or holds nothing usable', () => {
    for (const content of ['Sure! Go to the beach.', '{"suggestions": []}', '{"suggestions": "go"}', '{"recap": "x"}', '', '[1, 2]']) {
      expect(parseAnswer('followups', content), content).toBeNull();
    }
    for (const content of ['You were planning.', '{"recap": ""}', '{"recap": 3}', `{"recap": "${'z'.repeat(1201)}"}`, '{"suggestions": ["a"]}']) {
      expect(parseAnswer('recap', content), content).toBeNull();
    }
    expect(parseAnswer('recap', '{"recap": "You were planning a trip.\\u0000"}')).toEqual({ kind: 'recap', recap: 'You were planning a trip.\ufffd' });
  });
});
