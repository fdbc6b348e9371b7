import type { DomainEvent, ToolCall } from '@rudder/contracts';
import { ownCallIds } from './call-ids';
import { summaryMessage } from './context';
import { userMessage, type ModelMessage } from './messages';
import type { ModelReply } from './model';
import type { RunTurnOptions, StoredTurn } from './run-options';
import { approvalOutcome, approvalRequested, approvedResult } from './tool-step';
import type { ToolResult } from './tools';
import { endTurn, evolveTurn, nextAction, type TurnState } from './turn';

/**
 * The loop seam's framework side. A framework (OpenAI Agents, the AI SDK, LangGraph, ADK) runs
 * its own loop; its adapter hands every model request and every tool call to a `DurableTurn`,
 * which makes each a step of the conversation's log exactly as Rudder's own loop (`runTurn`)
 * makes them:
 *
 * - **a durable model** (`model`): the framework's n-th model request in the turn is step n. A
 *   step already stored is answered from the log, never asked again; a new one takes the steers
 *   the last step's commit took (`Steer`: the adapter puts each in the framework's request, as
 *   its own user item, after the tool results it came after), asks the framework's own model,
 *   and stores the reply (`model.replied`, its calls started, or the turn's end);
 * - **durable tools** (`tool`): a call whose result is stored is answered from the log, never
 *   run again; a new one runs and its result is stored (`tool.ended`) — the commit that closes a
 *   step takes the steers that landed meanwhile, as it does for `runTurn`; a call whose tool
 *   needs approval (the framework's own flag) is parked as Rudder's approvals are;
 * - **the turn's end**: stop, interrupt, rollback and graceful stop are decided by the same rules
 *   (`nextAction`, the conversation's `decideTurnCommit`); once the turn ends or parks, the
 *   framework's run is aborted (`signal`) and whatever it asks next is refused.
 *
 * A run resumed after a crash or a rebalance runs the framework again from the turn's input:
 * every request up to the stored steps is answered from the log, with the same call ids, and
 * every stored result replayed, so the framework sees the sequence it saw before.
 */
export class DurableTurn {
  private stored: StoredTurn;
  /** The framework's requests so far in this run of the turn: the next one is this step. */
  private step = 0;
  /** The steps whose steers the framework's input already carries (a continuation's input is the turn so far). */
  private carried = 0;
  private readonly halt = new AbortController();
  private commits: Promise<StoredTurn>;
  /** Why a commit failed, once one did: the run then rejects with it, and the turn resumes from what was stored. */
  private storeFailed: { error: unknown } | null = null;
  /** Aborted when the run is stopped, or the turn ends or parks: the framework's run (its model request, its tools) should end. */
  readonly signal: AbortSignal;

  constructor(private readonly options: RunTurnOptions) {
    this.stored = { turn: options.turn, ended: false };
    this.commits = Promise.resolve(this.stored);
    this.signal = AbortSignal.any([options.signal, this.halt.signal]);
  }

  /** The turn as stored now. */
  get turn(): TurnState {
    return this.stored.turn;
  }

  /** Whether the turn ended (then `turn` is the turn as it ended) or parked: nothing more runs in this run. */
  get settled(): 'ended' | 'parked' | null {
    if (this.stored.ended) return 'ended';
    return nextAction(this.stored.turn, this.options.agent).type === 'park' ? 'parked' : null;
  }

  /**
   * What the framework's run starts from, in Chat Completions messages: the summary of the
   * conversation's older turns (if compacted), its earlier turns (each whole: prompt, steered
   * messages, answers, oldest first), and this turn's prompt. A continuation (`continuation`)
   * starts from the turn as stored so far instead of its prompt.
   */
  input(): ModelMessage[] {
    const { summary, earlier } = this.options.history();
    return [...(summary === null ? [] : [summaryMessage(summary)]), ...earlier.flatMap((t) => t.messages), ...this.turn.prompt.messages.map(userMessage)];
  }

  /**
   * The framework's next model request: answered from the log when its step is stored, else
   * asked by `ask` (the framework's own model, given the steers to put in the request) and
   * stored. The reply's call ids are the log's (`ownCallIds`): the framework's results answer
   * them. `outputs` are the results the framework's request holds by call id: a result the
   * framework made itself, not through `tool` (a handoff's, say), is stored from there before the
   * step, and a call it holds no result for is closed as such, so no call is left without one.
   * Rejects once the turn ended or parked (its run should end), and with `TurnOver` after storing
   * the turn's end when the rules end it here (its step limit, a graceful stop).
   */
  async model(ask: (request: ModelAsk) => Promise<ModelReply>, outputs: ReadonlyMap<string, string> = new Map()): Promise<ModelReply> {
    // The step is the framework's only once it is answered: a request the framework retries
    // (its own retries of a failed model call) asks for the same step again.
    const step = this.step;
    await this.commits;
    this.throwIfSettled();
    const stored = storedSteps(this.turn);
    if (step < stored.replies.length) {
      this.step++;
      return stored.replies[step];
    }
    const unanswered = this.turn.openCalls.filter((c) => !this.turn.approvals[c.id]);
    for (const call of unanswered) {
      const output = outputs.get(call.id);
      await this.storeResult(call, output === undefined ? { result: NO_RESULT, isError: true } : { result: output, isError: false });
    }
    this.throwIfSettled();
    const action = nextAction(this.turn, this.options.agent);
    if (action.type === 'end') await this.end(action.status, action.outcome);
    if (action.type !== 'request-model' || action.step !== step) {
      throw new Error(`the framework asked the model for step ${step}, but the turn is at ${JSON.stringify(action)}: its run does not follow the log`);
    }
    await this.options.beforeModelRequest?.();
    this.signal.throwIfAborted();
    const steers = storedSteps(this.turn).steers.filter((s) => s.step > this.carried && s.step <= step);
    const reply = await ask({ step, steers, signal: this.signal, onToken: (text) => this.options.onToken?.(step, text) });
    this.signal.throwIfAborted();
    const toolCalls = ownCallIds(reply.toolCalls, step);
    const turn = this.turn;
    const maxTokens = this.options.agent.context.maxTokens;
    const replied: DomainEvent = {
      type: 'model.replied',
      data: {
        turn: turn.id,
        step,
        content: reply.content,
        toolCalls,
        ...(reply.usage ? { usage: reply.usage, carried: { tokens: reply.usage.promptTokens, maxTokens } } : {}),
      },
    };
    await this.commit(() =>
      toolCalls.length === 0
        ? [replied, ...endTurn(evolveTurn(turn, replied), 'completed', null)]
        : [replied, ...toolCalls.map((call): DomainEvent => ({ type: 'tool.started', data: { turn: turn.id, step, call } }))],
    );
    this.step++;
    // Winding down, a reply that calls tools again ends the turn, its calls not run.
    const after = nextAction(this.turn, this.options.agent);
    if (!this.stored.ended && after.type === 'end') await this.end(after.status, after.outcome);
    return { ...reply, toolCalls };
  }

  /**
   * A tool call of the framework's: its stored result when there is one; else `run` (the
   * framework's tool, with the arguments to run it with: the person's when they edited them in
   * an approval) and its result stored. `needsApproval` (the framework's own flag for the call)
   * parks it: `approval.requested` is stored, and the call waits — it rejects once the step
   * parks, and the decision, stored later, is read by the next run. A tool that throws is
   * stored as an error result, and the error rethrown for the framework to handle as its own.
   */
  async tool(call: ToolCall, run: (args: string) => Promise<string>, needs: { needsApproval?: boolean; approvalTimeout?: number } = {}): Promise<string> {
    await this.commits;
    const stored = storedResult(this.turn, call.id);
    if (stored !== undefined) return stored;
    this.throwIfSettled();
    const open = this.turn.openCalls.find((c) => c.id === call.id);
    if (!open) throw new Error(`the framework ran a call the turn does not hold open: ${call.id}`);
    const approval = this.turn.approvals[call.id];
    if (approval) {
      const outcome = approvalOutcome(approval, this.turn);
      if (outcome === null) return this.parked();
      if (outcome !== 'run') return this.storeResult(open, outcome);
    } else if (needs.needsApproval) {
      const requested = approvalRequested(this.turn, this.turn.steps - 1, open, needs.approvalTimeout, this.options.now());
      await this.commit(() => [requested]);
      return this.parked();
    }
    let ran: ToolResult;
    try {
      ran = { result: await run(approval?.arguments ?? open.arguments), isError: false };
    } catch (error) {
      this.signal.throwIfAborted();
      await this.storeResult(open, { result: describe(error), isError: true });
      throw error;
    }
    // A tool that answers after the run was stopped (one that caught its own abort) stores nothing.
    this.signal.throwIfAborted();
    return this.storeResult(open, approval ? approvedResult(approval, ran) : ran);
  }

  /**
   * Runs the framework through the turn: `drive` runs it once from the input given (`input()`
   * first). When the framework's run finishes and the turn goes on — a steer landed with its
   * final answer — it runs again from the turn as stored, steers in place; when the framework
   * stopped without a final answer (its own step limit), the turn ends `completed` there. A
   * framework that fails ends the turn `failed`. Answers the turn as it ended, or as it parked.
   */
  async run(drive: (input: ModelMessage[]) => Promise<void>): Promise<TurnState> {
    let input = this.input();
    for (;;) {
      const action = nextAction(this.turn, this.options.agent);
      if (action.type === 'end' && !this.stored.ended) await this.end(action.status, action.outcome).catch(() => undefined);
      if (this.settled) return this.turn;
      try {
        await drive(input);
      } catch (error) {
        if (this.options.signal.aborted) throw error;
        await this.commits.catch(() => undefined);
        if (this.storeFailed) throw this.storeFailed.error;
        if (this.settled) return this.turn;
        await this.end('failed', `the agent's framework failed: ${describe(error)}`).catch(() => undefined);
        return this.turn;
      }
      await this.commits;
      if (this.settled) return this.turn;
      // Where the framework's run ended: the turn as stored up to its next request's step (a
      // resumed run replays a turn that went further).
      const before = messagesBefore(this.turn, this.step);
      if (this.step > 0 && before.at(-1)?.role === 'user') {
        // Its final answer took steers: the framework answers them from the turn so far.
        input = [...this.input().slice(0, -this.turn.prompt.messages.length), ...before];
        this.carried = this.step;
        continue;
      }
      await this.end('completed', null).catch(() => undefined);
      return this.turn;
    }
  }

  /** Stores the turn's end, and refuses whatever the framework asks next. */
  private async end(status: Parameters<typeof endTurn>[1], outcome: string | null): Promise<never> {
    await this.commit(() => endTurn(this.turn, status, outcome));
    throw new TurnOver();
  }

  private async storeResult(call: ToolCall, ran: ToolResult): Promise<string> {
    const turn = this.turn;
    await this.commit(() => [{ type: 'tool.ended', data: { turn: turn.id, step: turn.steps - 1, callId: call.id, name: call.name, result: ran.result, isError: ran.isError } }]);
    return ran.result;
  }

  /** A call that waits for a person: it ends when the step parks (or the turn ends). */
  private parked(): Promise<never> {
    return new Promise((_, reject) => {
      const settle = () => reject(this.signal.reason instanceof Error ? this.signal.reason : new TurnOver());
      if (this.signal.aborted) settle();
      else this.signal.addEventListener('abort', settle, { once: true });
    });
  }

  /** One commit at a time, in the order asked; after each, a turn that ended or parked halts the framework's run. */
  private commit(events: () => DomainEvent[]): Promise<StoredTurn> {
    this.commits = this.commits.then(async (before) => {
      if (before.ended) return before;
      try {
        this.stored = await this.options.commit(events());
      } catch (error) {
        // Nothing more is stored in this run (every later commit waits on this one): it ends, rejecting.
        this.storeFailed ??= { error };
        this.halt.abort(error);
        throw error;
      }
      const settled = this.settled;
      if (settled) this.halt.abort(settled === 'parked' ? new TurnParked() : new TurnOver());
      return this.stored;
    });
    return this.commits;
  }

  private throwIfSettled(): void {
    const settled = this.settled;
    if (settled === 'parked') throw new TurnParked();
    if (settled === 'ended') throw new TurnOver();
  }
}

/** What a new model request is asked with: its step, the steers to put in it, the run's signal, where tokens go. */
export type ModelAsk = { step: number; steers: readonly Steer[]; signal: AbortSignal; onToken: (text: string) => void };

/**
 * A steered message for the framework's request: its text, as a user item of the framework's
 * own, placed right after the results of `afterCalls` (the calls of the reply before it). A
 * request that no longer holds those results (the framework trimmed them) leaves it out, so no
 * request starts at a steered message.
 */
export type Steer = { id: string; text: string; step: number; afterCalls: readonly string[] };

/** The framework's run is over: the turn ended (its end stored). */
export class TurnOver extends Error {
  constructor() {
    super('the turn is over');
    this.name = 'TurnOver';
  }
}

/** The framework's run is over: every call left waits for a person's approval. */
export class TurnParked extends Error {
  constructor() {
    super('the turn waits for an approval');
    this.name = 'TurnParked';
  }
}

/** The turn's stored replies, in step order, and the steers it took with the step whose request carries each. */
export function storedSteps(turn: TurnState): { replies: ModelReply[]; steers: Steer[] } {
  const replies: ModelReply[] = [];
  const steers: Steer[] = [];
  for (const message of turn.messages.slice(turn.prompt.messages.length)) {
    if (message.role === 'assistant') {
      replies.push({ content: message.content, toolCalls: (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })) });
    } else if (message.role === 'user') {
      const { id } = turn.steered[steers.length];
      steers.push({ id, text: message.content, step: replies.length, afterCalls: (replies.at(-1)?.toolCalls ?? []).map((c) => c.id) });
    }
  }
  return { replies, steers };
}

/** The turn's messages before its reply of `step` (all of them when it has none yet). */
function messagesBefore(turn: TurnState, step: number): ModelMessage[] {
  let replies = 0;
  const index = turn.messages.findIndex((m) => m.role === 'assistant' && replies++ === step);
  return index === -1 ? turn.messages : turn.messages.slice(0, index);
}

/** What a call the framework gave no result for is closed with. */
export const NO_RESULT = 'no result: the agent did not answer this call';

/** A call's stored result, if the turn holds one. */
function storedResult(turn: TurnState, callId: string): string | undefined {
  for (const message of turn.messages) if (message.role === 'tool' && message.tool_call_id === callId) return message.content;
  return undefined;
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
