import {
  affordanceAsked,
  affordanceReply,
  lastMessage,
  lastUserText,
  reply,
  toolResults,
  userTexts,
  type Affordance,
  type ModelRequest,
  type Script,
  type ScriptedReply,
} from '@rudder/scripted-model';

/**
 * The model the system tests talk to. It reads the last user message:
 * - `wait <ms>` calls the wait tool (and answers `after <results>: <text>` after the result);
 * - `record <ms>` calls the test worker app's `record` tool, which logs each run to TOOL_LOG;
 * - `todos: <changes> ;; <changes> ;; …` keeps a plan over as many steps: each step calls the
 *   built-in `todos` tool with the next changes (JSON, or a string the model got wrong), or with
 *   `hold:<gate>` the `hold` tool held at that gate; after the last step it answers `planned: <text>`;
 * - `call <tool> <json>` calls that tool with those arguments (several, ` && `-separated, in one
 *   reply); `call-twice <tool> <json>` calls it, and once more after its result under the same
 *   call id (`same`), then answers;
 * - `fail` (or `fail <ms>`) answers HTTP 500 (after that long);
 * - `slow <ms>` answers after that long;
 * - anything else is answered `answer to <text>`.
 * Gates (see libs/scripted-model/src/gates.ts) hold a reply until the test opens them:
 * `gate:<name>` holds the reply to that user message (the tool call, the text or the failure),
 * `gate-after-tool:<name>` holds the reply that follows its tool results, and `tool-gate:<name>`
 * calls the `hold` tool of the test worker app (test/agents/worker.ts), which waits at that gate:
 * a tool call held open until the test opens it; `mid-gate:<name>` holds the reply after its
 * first word was streamed (a cut "while the model writes" that has tokens on both sides). A test waits with
 * `stack.model.gate(name).reached()` and releases with `.open()`, so "while the model writes"
 * is true by construction.
 *
 * The companion's follow-ups and recap requests (known by their system prompt) are answered in
 * the shape they ask for (`affordanceReply`), unless a test planned the next ones of that kind
 * (`affordancesNext`): an error, a gate that holds it, or garbage.
 */
export const testScript: Script = (request) => {
  const affordance = affordanceAsked(request);
  if (affordance) return { ...affordanceReply(affordance, request), ...affordancesNext[affordance].shift() };
  const text = lastUserText(request);
  if (text.startsWith('todos: ')) return planStep(request, text);
  const results = toolResults(request);
  const twice = /^call-twice (\w+) (\{.*\})$/.exec(text);
  const called = request.body.messages.filter((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0).length;
  if (twice && called < 2) return reply.tools([{ id: 'same', name: twice[1], arguments: JSON.parse(twice[2]) }]);
  if (lastMessage(request)?.role === 'tool') {
    return reply.text(`after ${results.map((r) => r.content).join(', ')}: ${text}`, { gate: gateNamed(text, 'gate-after-tool') });
  }
  const midGate = gateNamed(text, 'mid-gate');
  const gate = midGate ?? gateNamed(text, 'gate');
  const held = midGate ? { gate, gateAfterChunks: 2 } : { gate }; // chunk 0 is the role, 1 the first word
  const toolGate = gateNamed(text, 'tool-gate');
  if (toolGate) return reply.tools([{ name: 'hold', arguments: { gate: toolGate } }], { content: `waiting for ${text}`, ...held });
  if (text.startsWith('call ')) {
    const calls = text.slice('call '.length).split(' && ').map((call) => /^(\w+) (\{.*\})$/.exec(call)!);
    return reply.tools(calls.map(([, name, args]) => ({ name, arguments: JSON.parse(args) })), { content: `calling for ${text}`, gate });
  }
  const record = /^record (\d+)/.exec(text);
  if (record) return reply.tools([{ name: 'record', arguments: { ms: Number(record[1]) } }], { content: `waiting for ${text}`, gate });
  const wait = /wait (\d+)/.exec(text);
  if (wait) return reply.tools([{ name: 'wait', arguments: { ms: Number(wait[1]) } }], { content: `waiting for ${text}`, gate });
  const fail = /\bfail\b(?: (\d+))?/.exec(text);
  if (fail) return reply.error(500, 'the scripted model fails on purpose', { delayMs: Number(fail[1] ?? 0), gate });
  const slow = /slow (\d+)/.exec(text);
  if (slow) return reply.text(`answer to ${text}`, { delayMs: Number(slow[1]), gate });
  return reply.text(`answer to ${text}`, held);
};

/** The next step of a `todos:` turn: the steps' calls are counted in the request, after its prompt. */
function planStep(request: ModelRequest, text: string): ScriptedReply {
  const steps = text.slice('todos: '.length).split(' ;; ');
  const prompt = request.body.messages.findLastIndex((m) => m.role === 'user');
  const taken = request.body.messages.slice(prompt + 1).filter((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0).length;
  const step = steps[taken];
  if (step === undefined) return reply.text(`planned: ${text}`);
  const hold = /^hold:([\w.-]+)$/.exec(step);
  if (hold) return reply.tools([{ name: 'hold', arguments: { gate: hold[1] } }]);
  let changes: unknown;
  try {
    changes = JSON.parse(step);
  } catch {
    changes = step; // not JSON: sent as a string, as a model that got it wrong would
  }
  return reply.tools([{ name: 'todos', arguments: changes }]);
}

const gateNamed = (text: string, prefix: 'gate' | 'gate-after-tool' | 'tool-gate' | 'mid-gate') => new RegExp(`(?:^|\\s)${prefix}:([\\w.-]+)`).exec(text)?.[1];

/** A gate name unique in this process, for a test to put in a message as `gate:<name>`. */
let gates = 0;
export const gateName = (what: string) => `${what}-${++gates}`;

/** The requests whose last user message is `text`: how often the model was asked about it. */
export const requestsAbout = (requests: readonly ModelRequest[], text: string) =>
  requests.filter((r) => lastUserText(r) === text);

/** The requests that hold a user message `text` anywhere. */
export const requestsWith = (requests: readonly ModelRequest[], text: string) =>
  requests.filter((r) => userTexts(r).includes(text));

/**
 * What the next affordance requests of each kind answer, in order, merged over the scripted
 * answer: `reply.error(500)` or `reply.error(429)` fails it, `{gate}` holds it at a gate (a model
 * that hangs, until the test opens it), `{content: 'garbage'}` answers what was not asked for.
 * Module state: each spec file has its own (vitest runs files apart).
 */
export const affordancesNext: Record<Affordance, ScriptedReply[]> = { followups: [], recap: [] };

/** The companion's follow-ups and recap requests among `requests`, of one kind or both. */
export const affordanceRequests = (requests: readonly ModelRequest[], kind?: Affordance) =>
  requests.filter((r) => (kind === undefined ? affordanceAsked(r) !== undefined : affordanceAsked(r) === kind));
