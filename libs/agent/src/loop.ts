import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { isStorableText, type DomainEvent, type ToolCall } from '@rudder/contracts';
import { compactionDue, fitRequest, type ContextBudget } from './context';
import type { EarlierTurn } from './tokens';
import type { ModelClient } from './model';
import type { ModelMessage } from './messages';
import { changeTodos, planMessage, TODOS_TOOL, todosTool } from './todos';
import { needsApproval, runToolCall, type Tool, type ToolContext, type ToolResult } from './tools';
import { endTurn, evolveTurn, nextAction, type CallApproval, type TurnState } from './turn';

export type Agent = {
  systemPrompt: string;
  tools: readonly Tool[];
  /** A turn fails rather than asking the model more than this many times. */
  maxSteps: number;
  /** What a model request may carry (`fitRequest`); its usage ratio learns from each reply. */
  context: ContextBudget;
  /**
   * Whether it keeps a plan (todos.ts): its model gets the built-in `todos` tool, and every
   * request carries the plan right after the instructions.
   */
  todos: boolean;
};

/** The tools with the built-in `todos` added, one array per list of tools: their token count is kept by array (tokens.ts). */
const withTodos = new WeakMap<readonly Tool[], readonly Tool[]>();

/** The tools a model request offers: the agent's, and the built-in `todos` when it keeps a plan. */
function offeredTools(agent: Agent): readonly Tool[] {
  if (!agent.todos) return agent.tools;
  let offered = withTodos.get(agent.tools);
  if (!offered) withTodos.set(agent.tools, (offered = [...agent.tools, todosTool]));
  return offered;
}

/**
 * What a commit answers: the turn as the conversation's fold holds it once the commit is
 * stored — every event stored up to it folded in, once, in log order, whoever stored it (a stop,
 * say) — and whether what was stored ended it (then `turn` is the turn as it ended). The loop
 * folds nothing itself: each step reads the turn the last commit answered.
 */
export type StoredTurn = {
  turn: TurnState;
  ended: boolean;
  /** Every open call of the turn waits for a person's decision: nothing runs until one comes (a new run then). */
  parked?: boolean;
};

export type ConversationHistory = { summary: string | null; earlier: readonly EarlierTurn[] };

export type RunTurnOptions = {
  /** The conversation's key, for the tools' context. */
  conversation: string;
  agent: Agent;
  model: ModelClient;
  /**
   * The conversation before this turn, as it stands at each request (a compaction changes it
   * mid-turn): the summary of its older turns, if it was compacted, and the earlier turns a
   * request may carry after it, oldest first, each whole (its prompt, the messages steered to
   * it, its answers). Each request carries the summary and the latest of them that fit its budget.
   */
  history(): ConversationHistory;
  /**
   * Compacts the history at this step, before its model request, when its carried tokens pass
   * the agent's `compactAt` (`compactionDue`): summarises all but the latest `keep` earlier
   * turns by a model request of its own and stores the summary (`history.compacted`) through
   * `commit`, answering that commit's answer; null when it did not (the model failed it, say):
   * the step's request is then made as it is. Absent: the history is never compacted.
   */
  compact?(at: { turn: TurnState; step: number; keep: number }): Promise<StoredTurn | null>;
  /** The turn as stored when the run starts. */
  turn: TurnState;
  /**
   * Stores events of the turn durably, in one transaction, and answers the turn as stored
   * after them (`StoredTurn`): the store may add to them (steered messages taken at a step) or
   * replace the turn's end (a steer landed while the model wrote its final answer: the turn
   * takes one more step). The loop goes on only after it resolves; a rejection ends the run and
   * the turn resumes from what was stored.
   */
  commit(events: DomainEvent[]): Promise<StoredTurn>;
  onToken?: (step: number, text: string) => void;
  /**
   * Runs before each model request. A rejection ends the run before the request is sent,
   * nothing stored, as a commit's does (the turn resumes from what was stored): the worker
   * checks there that it still owns the conversation after a pause.
   */
  beforeModelRequest?: () => Promise<void>;
  /**
   * The time now, as the runner reads it (the worker's clock; a test's own). A step reads it
   * once, at its start, and that is the step's time: an approval its calls request is requested
   * then (`requestedAt`, and `expiresAt` from it). The loop reads no clock of its own.
   */
  now(): Date;
  /** Aborting stops the model request and the tools in flight; nothing more is stored. */
  signal: AbortSignal;
  /** Raised when the conversation asks the turn to finish early: its tools see it (`ToolContext.windDown`). Default: never. */
  windDown?: AbortSignal;
  /** How many newer inputs wait behind the turn now (`ToolContext.pending`). Default: none. */
  pending?: () => number;
  /**
   * Whether nothing waits that the commit of a step's last tool result could add to the turn
   * (a steer to take, an ending): then the next model request is sent while that commit is in
   * flight, and used once the commit stored exactly the turn it was made for (`Speculation`).
   * Absent or false: the request waits for the commit, as every request did before.
   */
  quiet?: () => boolean;
  /** Told what became of each request sent ahead (`quiet`): used, or thrown away (a model request paid for and not used). */
  onAhead?: (outcome: 'used' | 'discarded') => void;
};

/**
 * The next step's model request, sent while the commit of the step's last tool result is in
 * flight (else a one-tool turn waits a commit's round trip more). It is used only when the
 * request made from the turn as stored is the same request (the same step, tools and messages):
 * a commit that took a steer, or ended the turn, makes it be aborted and thrown away, and its
 * tokens with it (they are held until it is used).
 */
type Speculation = {
  step: number;
  tools: readonly Tool[];
  /** The request's messages: compared with the request made from the stored turn (`sameMessages`). */
  messages: readonly ModelMessage[];
  /** Its reply; once used, its held tokens go out first and the rest as they come. */
  use(): Promise<Awaited<ReturnType<ModelClient['reply']>>>;
  abort(): void;
};

/**
 * Drives one turn to its end: ask the model, store its reply, run its tool calls and store
 * each result, repeat; the reply without tool calls ends the turn, stored with `turn.ended`
 * in the same commit. A model that fails for good (after the client's retries) ends the turn
 * as `failed`. Returns the turn as it ended — or as it parked, when every call left waits for
 * a person's approval (`parked`): the run ends there, holding nothing, and a decision stored
 * later starts a new one from the log.
 */
export async function runTurn(options: RunTurnOptions): Promise<TurnState> {
  let stored: StoredTurn = { turn: options.turn, ended: false };
  const ahead: Ahead = { speculation: null };
  try {
    while (!stored.ended && !stored.parked) stored = await takeStep(stored.turn, options, ahead);
  } finally {
    ahead.speculation?.abort();
  }
  return stored.turn;
}

/** The request a step sent ahead of its commit, for the next step to use or throw away. */
type Ahead = { speculation: Speculation | null };

/** What the turn as stored does next (`nextAction`), up to and including its commit; answers that commit's answer. */
async function takeStep(turn: TurnState, options: RunTurnOptions, ahead: Ahead): Promise<StoredTurn> {
  const speculation = ahead.speculation;
  ahead.speculation = null;
  options.signal.throwIfAborted();
  const action = nextAction(turn, options.agent);
  if (action.type !== 'request-model') speculation?.abort();
  switch (action.type) {
    case 'end':
      return options.commit(endTurn(turn, action.status, action.outcome));
    case 'park':
      return { turn, ended: false, parked: true };
    case 'request-model':
      return requestModel(turn, action.step, options, speculation);
    case 'run-tools':
      return runTools(turn, { step: action.step, at: options.now() }, action.calls, options, ahead);
    default: {
      const never: never = action;
      throw new Error(`unknown action ${JSON.stringify(never)}`);
    }
  }
}

/**
 * Asks the model for step `step` and stores its reply: with `turn.ended` when it calls no tool,
 * else with its calls started. A turn whose request cannot fit its budget (`fitRequest`) ends
 * `failed`, saying so, without asking.
 */
async function requestModel(turn: TurnState, step: number, options: RunTurnOptions, speculation: Speculation | null = null): Promise<StoredTurn> {
  const { agent, model, commit, signal } = options;
  try {
    await options.beforeModelRequest?.();
    signal.throwIfAborted();
  } catch (error) {
    speculation?.abort();
    throw error;
  }
  const { tools, parts } = requestParts(turn, options);
  const keep = options.compact ? compactionDue(parts, agent.context) : null;
  if (keep !== null) {
    speculation?.abort();
    // A step of its own: what it stored (and the steers its commit took) is read before the request.
    const compacted = await options.compact!({ turn, step, keep });
    if (compacted) return compacted;
  }
  const request = fitRequest(parts, agent.context);
  const same = speculation !== null && request.fits && speculation.step === step && speculation.tools === tools && sameMessages(speculation.messages, request.messages);
  if (!same) speculation?.abort();
  if (!request.fits) return commit(endTurn(turn, 'failed', request.outcome));
  let reply;
  try {
    reply = same
      ? await speculation.use()
      : await model.reply({
          messages: request.messages,
          tools,
          signal,
          onToken: (text) => options.onToken?.(step, text),
        });
  } catch (error) {
    if (signal.aborted) throw error;
    return commit(endTurn(turn, 'failed', `the model failed: ${describe(error)}`));
  }
  // A reply that came back after the abort may be only a part of one (the `openai` package ends
  // an aborted stream as if it were complete; an agent's own client may do the same).
  signal.throwIfAborted();
  // What it carried, as the model counted it when it says so, else as the budget does.
  const carried = { tokens: reply.usage?.promptTokens ?? Math.ceil(request.tokens * agent.context.usage.value), maxTokens: agent.context.maxTokens };
  if (reply.usage) agent.context.usage.observe(request.tokens, reply.usage.promptTokens);
  const toolCalls = ownCallIds(reply.toolCalls, step);
  const replied: DomainEvent = {
    type: 'model.replied',
    data: { turn: turn.id, step, content: reply.content, toolCalls, ...(reply.usage ? { usage: reply.usage } : {}), carried },
  };
  return commit(
    toolCalls.length === 0
      ? // The end it proposes is made from the turn with this reply in it (the store may replace it).
        [replied, ...endTurn(evolveTurn(turn, replied), 'completed', null)]
      : [replied, ...toolCalls.map((call): DomainEvent => ({ type: 'tool.started', data: { turn: turn.id, step, call } }))],
  );
}

/** What a request of the turn carries: the tools offered, and its parts (`fitRequest` makes the request of them). */
function requestParts(turn: TurnState, options: RunTurnOptions) {
  const { agent } = options;
  const tools = offeredTools(agent);
  const plan = agent.todos ? planMessage(turn.todos.items) : null;
  return { tools, parts: { systemPrompt: agent.systemPrompt, plan, tools, ...options.history(), turn: turn.messages } };
}

/**
 * Sends the model request of `turn` (the turn as the step's commit is expected to store it)
 * ahead of that commit, when the conversation is quiet and the request needs no compaction and
 * fits; null otherwise. Its tokens are held until it is used.
 */
function speculate(turn: TurnState, options: RunTurnOptions): Speculation | null {
  const { agent, model } = options;
  if (!options.quiet?.()) return null;
  const action = nextAction(turn, agent);
  if (action.type !== 'request-model') return null;
  const { tools, parts } = requestParts(turn, options);
  if (options.compact && compactionDue(parts, agent.context) !== null) return null;
  const request = fitRequest(parts, agent.context);
  if (!request.fits) return null;
  const aborted = new AbortController();
  const signal = AbortSignal.any([options.signal, aborted.signal]);
  const held: string[] = [];
  let forward: ((text: string) => void) | null = null;
  const reply = (async () => {
    // Never a request a worker that lost the conversation would send (the same check as every request's).
    await options.beforeModelRequest?.();
    signal.throwIfAborted();
    return model.reply({ messages: request.messages, tools, signal, onToken: (text) => (forward ? forward(text) : held.push(text)) });
  })();
  reply.catch(() => undefined); // awaited only when used
  let settled = false;
  return {
    step: action.step,
    tools,
    messages: request.messages,
    use() {
      settled = true;
      options.onAhead?.('used');
      forward = (text) => options.onToken?.(action.step, text);
      for (const text of held.splice(0)) forward(text);
      return reply;
    },
    abort() {
      if (settled) return;
      settled = true;
      options.onAhead?.('discarded');
      aborted.abort(new Error('the request made ahead of the commit was not the one to make'));
    },
  };
}

/**
 * Whether two requests carry the same messages. The stored turn's messages are mostly the very
 * objects the request sent ahead was made of (a commit appends to the turn), so those compare by
 * identity and only the others (the step's results, the head) by value: a walk over the
 * messages, not the JSON of the whole context twice.
 */
function sameMessages(a: readonly ModelMessage[], b: readonly ModelMessage[]): boolean {
  return a.length === b.length && a.every((message, i) => message === b[i] || isDeepStrictEqual(message, b[i]));
}

/**
 * Runs the step's calls side by side; each result is stored as soon as it is known, one commit
 * at a time. The store may end the turn with the last result (it was interrupted at this step).
 * A call of the built-in `todos` tool is made at its commit, from the plan as the commits before
 * it left it, and stored with its result (`todos.updated`): two calls of one reply change the
 * plan one after the other, and a crash before the commit leaves the plan as it was.
 *
 * A call whose tool needs approval is not run: `approval.requested` is stored for it, and it
 * waits (the turn parks once nothing else of the step runs). Decided, it runs (approved: with
 * the person's arguments when they edited them, and its result says so) or gets a result that
 * says it was denied; a call still waiting when the turn is asked to end early is closed unrun.
 */
async function runTools(turn: TurnState, { step, at }: { step: number; at: Date }, calls: readonly ToolCall[], options: RunTurnOptions, ahead: Ahead): Promise<StoredTurn> {
  let stored: Promise<StoredTurn> = Promise.resolve({ turn, ended: false });
  // The step's results as the runs made them: once every call has one (none waited for a person or
  // changed the plan at its commit), the turn its commits store is known before they are done,
  // and the next request can be sent ahead of the last one.
  const results: DomainEvent[] = [];
  const ended = (call: ToolCall, { result, isError }: ToolResult): DomainEvent => ({
    type: 'tool.ended',
    data: { turn: turn.id, step, callId: call.id, name: call.name, result, isError },
  });
  const store = (events: (before: StoredTurn) => DomainEvent[]) => {
    stored = stored.then(async (before) => {
      const after = await options.commit(events(before));
      return before.ended ? before : after;
    });
    return stored;
  };
  await Promise.all(
    calls.map(async (call) => {
      const context = toolContext(turn, call, options);
      const approval = turn.approvals[call.id];
      if (approval) {
        const decided = await decidedCall(approval, call, turn, options, context);
        if (decided) await store(() => [ended(call, decided)]);
        return;
      }
      if (options.agent.todos && call.name === TODOS_TOOL) {
        await store((before) => {
          const change = changeTodos(before.turn.todos, call.arguments);
          const events = [ended(call, { result: change.result, isError: change.isError })];
          if (change.list) events.push({ type: 'todos.updated', data: { turn: turn.id, step, callId: call.id, ...change.list } });
          return events;
        });
        return;
      }
      if (await needsApproval(options.agent.tools, call, context)) {
        await store(() => [approvalRequested(turn, step, call, options.agent.tools, at)]);
        return;
      }
      const ran = await runToolCall(options.agent.tools, call, context);
      const result = ended(call, ran);
      results.push(result);
      const committed = store(() => [result]);
      // The step's last result: its commit is in flight, and the next request can go ahead of it.
      if (results.length === calls.length) ahead.speculation = speculate(results.reduce(evolveTurn, turn), options);
      await committed;
    }),
  );
  return stored;
}

/**
 * What a call with an approval answers: its run's result once approved (saying so when the
 * person edited its arguments), the denial's text once denied, a closing text when the turn is
 * asked to end early while it waits; null while it waits.
 */
async function decidedCall(approval: CallApproval, call: ToolCall, turn: TurnState, options: RunTurnOptions, context: ToolContext): Promise<ToolResult | null> {
  switch (approval.status) {
    case 'awaiting':
      if (turn.ending === null) return null;
      return {
        result: turn.ending === 'wind-down' ? 'not run: the turn was asked to wind down while the call waited for approval' : 'not run: a newer input interrupted the turn while the call waited for approval',
        isError: true,
      };
    case 'denied':
      return { result: approval.subject === null ? `denied: ${approval.reason ?? 'nobody approved it in time'}` : `denied by the user: ${approval.reason ?? 'no reason given'}`, isError: true };
    case 'approved': {
      if (approval.arguments === null) return runToolCall(options.agent.tools, call, context);
      const ran = await runToolCall(options.agent.tools, { ...call, arguments: approval.arguments }, context);
      return { ...ran, result: `run with arguments edited by the user: ${approval.arguments}\n\n${ran.result}` };
    }
    default: {
      const never: never = approval.status;
      throw new Error(`unknown approval status ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The request for a person's approval of `call`, at `at` (its step's time): a new approval id (the
 * call's once key keeps it one per call), and when its tool's timeout denies it.
 */
function approvalRequested(turn: TurnState, step: number, call: ToolCall, tools: readonly Tool[], at: Date): DomainEvent {
  const timeout = tools.find((t) => t.name === call.name)?.approvalTimeout;
  return {
    type: 'approval.requested',
    data: {
      turn: turn.id,
      step,
      approval: `appr_${randomUUID()}`,
      call,
      requestedAt: at.toISOString(),
      expiresAt: timeout === undefined ? null : new Date(at.getTime() + timeout).toISOString(),
    },
  };
}

const NEVER = new AbortController().signal;

const toolContext = (turn: TurnState, call: ToolCall, options: RunTurnOptions): ToolContext => ({
  conversation: options.conversation,
  turn: turn.id,
  callId: call.id,
  subject: turn.prompt.subject,
  signal: options.signal,
  windDown: options.windDown ?? NEVER,
  get pending() {
    return options.pending?.() ?? 0;
  },
  queued: turn.prompt.queued ?? false,
});

/**
 * Call ids come from the model, and each must name one call of its step: it is the call's once
 * key in the log and the id its result answers. An id that is empty, repeated within the
 * reply, over-long or not storable is replaced by `call_<step>_<index>` (in the stored reply
 * too, so the model reads its calls and their results under the same ids).
 */
export function ownCallIds(calls: readonly ToolCall[], step: number): ToolCall[] {
  const seen = new Set<string>();
  return calls.map((call, index) => {
    let id = call.id;
    if (id === '' || id.length > 200 || !isStorableText(id) || seen.has(id)) {
      id = `call_${step}_${index}`;
      while (seen.has(id) || calls.some((c) => c.id === id)) id += '_';
    }
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
