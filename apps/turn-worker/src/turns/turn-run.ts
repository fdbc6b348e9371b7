import type { ConversationEvent, DomainEvent, ToolCall } from '@rudder/contracts';
import type { StoredTurn, TurnState } from '@rudder/agent';
import { decideScheduleCall, decideTurnCommit, type ConversationState } from '@rudder/conversation';
import { hop, inSpan, tracerOf } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import { inputTraceContext } from '../tracing/input-traces';
import { compaction } from './compaction';
import { recentHistory, type Conversation } from './conversation';
import type { ConversationFold } from './conversation-fold';
import type { RunnerServices } from './runner-services';

const tracer = tracerOf('turn-worker');

/** What a turn's run needs of its conversation's runner. */
export type TurnRunner = {
  readonly key: string;
  readonly partition: number;
  /** The conversation as the runner folds it: the run reads its turn, history and state there at each step. */
  readonly fold: ConversationFold;
  /** Appends what `decide` makes of the state under the conversation's lock and folds it in; answers what it stored and the running turn as it ended, if it ended. */
  append(decide: (state: ConversationState) => DomainEvent[]): Promise<{ stored: ConversationEvent[]; ended: TurnState | null }>;
};

/** Whether the turn was asked to finish early, so its tools should wind down. */
const windingDown = (turn: TurnState | null | undefined) => turn?.ending === 'interrupt' || turn?.ending === 'wind-down';

/**
 * One run of the agent loop on a conversation's running turn (`runTurn`): to its end, until it
 * parks, or until a stop aborts it (the stop is then read from the log, and the turn ends
 * `stopped`). Each commit is decided under the conversation's lock (`decideTurnCommit`) and
 * answers the turn as the runner's fold holds it after it.
 */
export class TurnRun {
  readonly id: string;
  /** Aborted by a stop stored for the turn: its model request and tools end, then the turn ends `stopped`. */
  private readonly stopping = new AbortController();
  /** Raised once the turn is asked to finish early (an interrupt, a graceful stop): its tools see it. */
  private readonly windingDown = new AbortController();
  /** The turn as it ended, once a commit stored its end. */
  private ended: TurnState | null = null;

  constructor(
    private readonly turn: TurnState,
    private readonly runner: TurnRunner,
    private readonly services: RunnerServices,
  ) {
    this.id = turn.id;
    if (windingDown(turn)) this.windDown();
  }

  /** A stop was stored for the turn: abort its model request and tools. */
  stop(): void {
    this.stopping.abort(new Error('stop requested'));
  }

  /** Whether a stop aborted the run (it then ends `stopped` from the log, in a run of its own). */
  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** An interrupt or a graceful stop was stored for the turn: its tools see `windDown`. */
  windDown(): void {
    this.windingDown.abort(new Error('wind down'));
  }

  /** Runs the agent's loop (Rudder's own or a framework's, `agent.run`), from the conversation as it was folded when the run began (`current`); `released` ends it, storing nothing more. */
  async run(agent: RunnableAgent, current: Conversation, released: AbortSignal): Promise<void> {
    const { key, partition, fold } = this.runner;
    const { store, tokens, metrics } = this.services;
    const { turn } = this;
    const signal = AbortSignal.any([released, this.stopping.signal]);
    hop('worker.turn-run');
    const systemPrompt = await agent.systemPrompt(key);
    // Taking the turn by a handoff in it, its requests go through that handoff's filter for the rest of it.
    const { handoff } = turn;
    const filter = handoff?.to === agent.name ? this.services.agents.get(handoff.from)?.handoffFilter(agent.name) : undefined;
    // A span of the prompt's trace (see tracing/input-traces.ts); its commits store its context with their rows.
    const about = { parent: inputTraceContext(turn.prompt.id), attributes: { 'rudder.conversation': key, 'rudder.turn': turn.id, 'rudder.input': turn.prompt.id } };
    await inSpan(tracer, 'turn', about, () =>
      agent.run({
        conversation: key,
        // Read at each request, not copied: an MCP server's tools come and go while a turn runs.
        agent: {
          systemPrompt,
          maxSteps: agent.loop.maxSteps,
          context: agent.loop.context,
          todos: agent.loop.todos,
          schedules: agent.loop.schedules,
          name: agent.name,
          handoffs: agent.loop.handoffs,
          ...(filter ? { filter } : {}),
          ...(agent.loop.outputGuard ? { outputGuard: agent.loop.outputGuard } : {}),
          get tools() {
            return agent.loop.tools;
          },
        },
        model: agent.model,
        // As the fold holds it at each request: a compaction at a step changes it mid-turn.
        history: () => {
          const now = fold.conversation ?? current;
          return { summary: now.summary?.text ?? null, earlier: recentHistory(now, agent.historyTurns) };
        },
        compact: (at) => this.compact(agent, at, signal),
        turn,
        commit: (events) => this.commit(events),
        scheduleCall: (call, step) => this.scheduleCall(call, step),
        // After a pause past the session timeout, the partition may be another worker's: ask the model only if it is still ours.
        beforeModelRequest: () => {
          hop('worker.model-request');
          return store.check(partition);
        },
        // The worker's clock: each step's time (an approval's) is read from it, by the step.
        now: () => new Date(),
        signal,
        windDown: this.windingDown.signal,
        pending: () => fold.conversation?.state.queue.length ?? 0,
        // Nothing waits that the commit of a step's result could take (a landed steer) or end it with.
        quiet: () => {
          const state = fold.conversation?.state;
          return state !== undefined && state.steers.length === 0 && state.undecided === null && state.ending === null;
        },
        onToken: (step, text) => tokens.token({ conversation: key, turn: turn.id, step, text }),
        onAhead: (outcome) => metrics.ahead(outcome),
      }),
    );
  }

  /**
   * Compacts the history at a step of the running turn (`compaction`): the summary request,
   * then its event committed as a step (which takes the steers that came meanwhile: they wait
   * for the step's model request, never entering the summary's). A summary that cannot be made
   * (the model failed, say) is logged and the step goes on without it; an abort ends the run.
   */
  private async compact(agent: RunnableAgent, at: { turn: TurnState; step: number; keep: number }, signal: AbortSignal): Promise<StoredTurn | null> {
    const { key, partition, fold } = this.runner;
    const { store, options } = this.services;
    const conversation = fold.conversation;
    if (!conversation) return null;
    await store.check(partition);
    let event: DomainEvent | null;
    try {
      event = await compaction({ pool: store.poolFor(partition), key, conversation, keep: at.keep, turn: at.turn, step: at.step, budget: agent.loop.context, model: agent.model, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      options.log.warn('compacting the history failed; the step goes on without it', { conversation: key, turn: at.turn.id, error: String(error) });
      return null;
    }
    if (!event) return null;
    const stored = await this.commit([event]);
    options.fault('after-compaction-stored');
    return stored;
  }

  /**
   * A commit of the running turn: the store may take steers at a step, or end the turn there.
   * Answers the turn as the fold holds it after the commit: every event folded since the loop's
   * last commit is in it, in log order — what others stored before it too (a stop, say),
   * whether it came back with this write or as news.
   */
  private async commit(events: DomainEvent[]): Promise<StoredTurn> {
    if (events.some((e) => e.type === 'model.replied')) this.services.tokens.flushTokens();
    if (events.some((e) => e.type === 'tool.ended')) this.services.options.fault('before-tool-result-stored');
    return this.commitDecided(() => events);
  }

  /**
   * Stores a call of the built-in `schedule` tool at `step` as a commit of the running turn: its
   * result and its schedule's event decided under the lock from the state there (`decideScheduleCall`).
   */
  private async scheduleCall(call: ToolCall, step: number): Promise<StoredTurn> {
    this.services.options.fault('before-tool-result-stored');
    const { turn, runner, services } = this;
    return this.commitDecided((state) => decideScheduleCall(state, turn, { step, call, conversation: runner.key, now: new Date(), agents: services.agents }));
  }

  /** A commit of what `decide` makes of the state under the lock, decided as a commit of the running turn (`decideTurnCommit`). */
  private async commitDecided(decide: (state: ConversationState) => DomainEvent[]): Promise<StoredTurn> {
    const { fold } = this.runner;
    const { fault } = this.services.options;
    const turn = fold.conversation?.running;
    hop('worker.commit');
    const { stored, ended } = await this.runner.append((state) => {
      const events = decide(state);
      return turn ? decideTurnCommit(state, turn, events) : events;
    });
    hop('worker.committed');
    if (stored.some((e) => e.type === 'model.replied' && e.data.toolCalls.length > 0)) fault('after-reply-stored');
    if (stored.some((e) => e.type === 'tool.ended')) fault('after-tool-result-stored');
    if (stored.some((e) => e.type === 'steer.taken')) fault('after-steer-taken');
    if (stored.some((e) => e.type === 'agent.changed')) fault('after-handoff-stored');
    if (stored.some((e) => e.type === 'answer.rejected' && e.data.reask !== null)) fault('after-answer-rejected');
    if (ended?.id === this.id) this.ended = ended;
    const now = fold.conversation?.running;
    if (now?.id === this.id && windingDown(now)) this.windDown();
    if (now?.id === this.id) return { turn: now, ended: false };
    if (this.ended) return { turn: this.ended, ended: true };
    throw new Error(`turn ${this.id} is no longer running, and its end was not folded`);
  }
}
