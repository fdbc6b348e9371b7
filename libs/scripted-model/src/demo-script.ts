import { affordanceAsked, affordanceReply } from './affordances';
import {
  lastMessage,
  lastUserText,
  messageText,
  offersTool,
  reply,
  toolNameOf,
  toolResults,
  userTexts,
  type ModelRequest,
  type Script,
} from './script';

/**
 * The offline demo agent behind `npm start` without OPENAI_API_KEY. Deterministic: the same
 * conversation always gets the same answer. It shows the system working end to end:
 * - after a `wait` tool result: "Done waiting (<result>). …";
 * - when the last user message asks to wait ("wait 3s", "wait 500ms", "wait 2 seconds", "slow")
 *   and the request offers a `wait` tool: calls it with `{ ms }`;
 * - otherwise: echoes the last user message, and the one before it, to prove it read the conversation;
 * - "plan: fetch the list, migrate the fetchers, check archived ones" (and a request that offers the
 *   `todos` tool): keeps a plan of those steps, works on each (a `wait` of 800 ms) and ticks it off;
 * - the companion's follow-ups and recap requests: suggestions and a recap about the last user message.
 * Replies stream at ~15 ms per word so streaming is visible.
 */
export const demoScript: Script = (request) => {
  // The companion's follow-ups and recap requests (not a turn): answered in the shape they ask for.
  const affordance = affordanceAsked(request);
  if (affordance) return affordanceReply(affordance, request);
  const pace = { tokenDelayMs: 15 };
  const asked = lastUserText(request);
  const steps = planned(asked);
  if (steps && offersTool(request, 'todos')) return planStep(request, steps);
  // A tool result is always answered with text, never another call: the user message that asked
  // to wait is still the last user message, so checking it again would wait forever.
  if (lastMessage(request)?.role === 'tool') {
    const results = toolResults(request).map((r) => ({ name: toolNameOf(request, r), text: messageText(r) }));
    const waited = results.find((r) => r.name === 'wait');
    const summary = `About your message ${quote(asked)}: that's all the offline demo model can do with it.`;
    if (waited) return reply.text(`Done waiting (${shorten(waited.text, 80)}). ${summary}`, pace);
    const listed = results.map((r) => `${r.name ?? 'tool'} → ${shorten(r.text, 60)}`).join('; ');
    return reply.text(`Got tool results: ${listed}. ${summary}`, pace);
  }
  const ms = requestedWaitMs(asked);
  if (ms !== undefined && offersTool(request, 'wait')) {
    return reply.tools([{ name: 'wait', arguments: { ms } }], { content: 'Let me take a moment…', ...pace });
  }
  return reply.text(echo(request, ms !== undefined), pace);
};

/** The steps of "plan: a, b, c" (at most 6), or undefined when the message asks for no plan. */
function planned(text: string): string[] | undefined {
  const match = /^plan:\s*(.+)$/is.exec(text.trim());
  const steps = match?.[1].split(/[,;\n]/).map((s) => s.trim()).filter(Boolean).slice(0, 6);
  return steps && steps.length > 1 ? steps : undefined;
}

/**
 * The next step of a planned turn, from the calls made since its prompt: the plan first (the
 * first step in progress), then for each step a `wait` and the call that marks it done (and the
 * next one in progress), then the answer.
 */
function planStep(request: ModelRequest, steps: string[]) {
  const pace = { tokenDelayMs: 15 };
  const prompt = request.body.messages.findLastIndex((m) => m.role === 'user');
  const taken = request.body.messages.slice(prompt + 1).filter((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0).length;
  if (taken === 0) {
    return reply.tools([{ name: 'todos', arguments: { add: steps.map((text, i) => ({ text, status: i === 0 ? 'in_progress' : 'pending' })) } }], { content: `A plan of ${steps.length} steps.`, ...pace });
  }
  const step = Math.ceil(taken / 2); // 1-based: the step being worked on
  if (step <= steps.length && taken % 2 === 1) return reply.tools([{ name: 'wait', arguments: { ms: 800 } }], { content: `Working on ${quote(steps[step - 1])}…`, ...pace });
  if (step <= steps.length) {
    const set = [{ n: step, status: 'done' }, ...(step < steps.length ? [{ n: step + 1, status: 'in_progress' }] : [])];
    return reply.tools([{ name: 'todos', arguments: { set } }], pace);
  }
  return reply.text(`All ${steps.length} steps are done. (offline demo model — set OPENAI_API_KEY for a real one)`, pace);
}

function echo(request: ModelRequest, wantedToWait: boolean): string {
  const said = userTexts(request);
  const parts = [`You said: ${quote(said.at(-1) ?? '')}.`];
  if (said.length > 1) parts.push(`Earlier you said: ${quote(said.at(-2) ?? '')}.`);
  if (wantedToWait) parts.push('(I would wait, but this request offers no "wait" tool.)');
  parts.push('(offline demo model — set OPENAI_API_KEY for a real one)');
  return parts.join(' ');
}

export const DEFAULT_WAIT_MS = 3000;
export const MAX_WAIT_MS = 60_000;

/** Milliseconds per unit as the pattern below matches it; no unit means seconds. */
function unitMs(unit = 's'): number {
  const u = unit.toLowerCase();
  if (u === 'ms' || u.startsWith('milli')) return 1;
  return u.startsWith('m') ? 60_000 : 1000;
}

/**
 * How long a message asks to wait: "wait 3s", "wait 500ms", "wait 2 seconds", "wait 1.5 min"
 * (a bare number means seconds); the word "slow" means the default. Capped at MAX_WAIT_MS.
 * undefined when the message does not ask to wait.
 */
export function requestedWaitMs(text: string): number | undefined {
  const match = /\bwait\s+(?:for\s+)?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?\b/i.exec(text);
  if (match) {
    return Math.min(Math.round(Number(match[1]) * unitMs(match[2])), MAX_WAIT_MS);
  }
  return /\bslow\b/i.test(text) ? DEFAULT_WAIT_MS : undefined;
}

const shorten = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
const quote = (text: string) => `"${shorten(text, 120)}"`;
