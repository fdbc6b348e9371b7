import { FOLLOWUPS_MAX, storableText, type TranscriptItem } from '@rudder/contracts';
import type { ModelMessage } from '@rudder/agent';
import { ANSWER_SHAPE } from './settings';

/** The two affordances: follow-up suggestions and the recap. */
export type AffordanceKind = 'followups' | 'recap';

/** What an affordance holds once made: the suggestions (1 to FOLLOWUPS_MAX), or the recap. */
export type Made = { kind: 'followups'; suggestions: string[] } | { kind: 'recap'; recap: string };

/** A message of the transcript as the request shows it: the user's, the assistant's, or a person's decision on a tool call (`approval`). */
export type TranscriptLine = { role: TranscriptItem['role']; text: string };

/** How each role's messages are labelled in the request; a decision reads `Tool approval: denied send_email: …`. */
const SPEAKER: Record<TranscriptLine['role'], string> = { user: 'User', assistant: 'Assistant', approval: 'Tool approval' };

/** What a request shows of the transcript: its last messages, each cut, and all of them within a budget. */
export const TRANSCRIPT_MESSAGES = 40;
const MESSAGE_CHARS = 2000;
const TRANSCRIPT_CHARS = 16_000;
/** A suggestion longer than this is not a short next message: it is left out. */
const SUGGESTION_CHARS = 200;
/** A recap longer than this is not two or three sentences: the answer is garbage. */
const RECAP_CHARS = 1200;

/**
 * The model request of an affordance: its instructions (the configured prompt, then the answer's
 * shape) as the system message, and the transcript up to the last ended turn as one user message
 * (oldest first, the newest kept when the budget runs out). Nothing else: no agent
 * instructions, no tools, and the request is never part of any turn.
 */
export function affordanceRequest(kind: AffordanceKind, prompt: string, transcript: readonly TranscriptLine[]): ModelMessage[] {
  const lines: string[] = [];
  let budget = TRANSCRIPT_CHARS;
  for (const message of [...transcript].reverse()) {
    const text = message.text.length > MESSAGE_CHARS ? `${message.text.slice(0, MESSAGE_CHARS)} […]` : message.text;
    const line = `${SPEAKER[message.role]}: ${text}`;
    if (line.length > budget && lines.length > 0) break;
    lines.unshift(line);
    budget -= line.length;
  }
  return [
    { role: 'system', content: `${prompt}\n\n${ANSWER_SHAPE[kind]}` },
    { role: 'user', content: `The conversation so far, oldest first:\n\n${lines.join('\n\n')}` },
  ];
}

/**
 * What the model answered, if it is what was asked for; null for anything else (garbage: not
 * JSON, another shape, no usable suggestion, a recap that is empty or far too long). Texts are
 * made storable (U+FFFD for what PostgreSQL cannot hold) and trimmed; suggestions that are
 * empty, too long or repeated are left out, and at most FOLLOWUPS_MAX are kept.
 */
export function parseAnswer(kind: AffordanceKind, content: string): Made | null {
  const json = jsonIn(content);
  if (kind === 'followups') {
    const list = Array.isArray(json) ? json : isRecord(json) ? json.suggestions : undefined;
    if (!Array.isArray(list)) return null;
    const texts = list.filter((item): item is string => typeof item === 'string').map(clean);
    const suggestions = [...new Set(texts.filter((text) => text.length > 0 && text.length <= SUGGESTION_CHARS))].slice(0, FOLLOWUPS_MAX);
    return suggestions.length > 0 ? { kind, suggestions } : null;
  }
  const recap = isRecord(json) && typeof json.recap === 'string' ? clean(json.recap) : '';
  return recap.length > 0 && recap.length <= RECAP_CHARS ? { kind, recap } : null;
}

/** The JSON value of an answer, also inside a Markdown code fence; undefined when there is none. */
function jsonIn(content: string): unknown {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(content);
  try {
    return JSON.parse(fenced ? fenced[1] : content);
  } catch {
    return undefined;
  }
}

const clean = (text: string): string => storableText(text).replace(/\s+/g, ' ').trim();

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
