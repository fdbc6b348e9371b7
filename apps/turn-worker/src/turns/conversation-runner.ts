import { setTimeout as sleep } from 'node:timers/promises';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { runTurn, type StoredTurn, type TurnState } from '@rudder/agent';
import { conversationRules, decideTimeouts, decideTurnCommit, hasOpenWork, parked, startNextTurn, type ConversationState } from '@rudder/conversation';
import { AlreadyStoredError, appendToConversation, FencedError, type Epochs, type OutboxRelay, type Seen, type UnchangedWriter } from '@rudder/event-store';
import { hop, inSpan, tracerOf, type Log, type Pool } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import type { FaultPoint } from '../fault-points';
import type { ConversationNews } from '../ingest/ingest-inputs';
import { inputTraceContext } from '../tracing/input-traces';
import { compaction } from './compaction';
import { emptyConversation, recentHistory, type Conversation } from './conversation';
import { ConversationFold } from './conversation-fold';
import type { HeldEpochs } from './held-epochs';

const tracer = tracerOf('turn-worker');

export type RunnerDeps = {
  pool: Pool;
  /** The epochs this worker holds now; every write is checked against them. */
  epochs(): Epochs;
  /** When the worker last knew it held each partition's epoch; checked before each model request. */
  held: HeldEpochs;
  relay: OutboxRelay;
  /**
   * Makes a write's one statement (`appendToConversation`): the worker's `groupedWrites`, so
   * the steps its turns store at the same moment share a statement and a commit.
   */
  writeUnchanged: UnchangedWriter<ConversationState>;
  /** The channel every write is announced on as it commits, now (the one `writeUnchanged` announces on; null: none). */
  announce: () => string | null;
  /** The agent that answers a conversation (null: not opened yet, the default). */
  agentOf(name: string | null): RunnableAgent | undefined;
  onToken(token: { conversation: string; turn: string; step: number; text: string }): void;
  /** How many earlier turns a fold keeps (the largest `history.turns` of the agents; null: every one). */
  historyKept: number | null;
  /** Starts sending the tokens held back (not waited for): called before a reply's commit, so they go out before their step's events. */
  flushTokens(): void;
  newTurnId(): string;
  fault(point: FaultPoint): void;
  log: Log;
  /** A write of this runner was fenced (counted by the worker's metrics). */
  onFenced(): void;
  /** A model request sent ahead of a commit was used or thrown away (`RunTurnOptions.onAhead`; counted by the worker's metrics). */
  onAhead?(outcome: 'used' | 'discarded'): void;
  retryMs: number;
  /** A snapshot of the fold is stored once the log has grown by this many events since the last one. */
  snapshotEvery: number;
  /** Something falls due in a conversation at `dueAt` (an approval's timeout): wake it then (`ApprovalDeadlines`; absent: only the store's deadlines read at an assignment wake it). */
  wakeAt?(dueAt: string): void;
};

export type ConversationRunner = {
  /**
   * New inputs may be stored: run what is due. With `news` (what one write just stored, and the
   * position before it) a runner holding its conversation as of exactly that position folds it
   * at once; otherwise it reads the log.
   */
  poke(news?: ConversationNews): void;
  /** A stop was stored for the running turn: abort its model request and tools, then end it. */
  stopTurn(): void;
  /** An interrupt or a graceful stop was stored for `turn`: if it runs here, its tools see `windDown`. */
  windDown(turn: string): void;
  /** Stops the turn in flight without storing anything more (the partition moved, or shutdown). */
  abort(): Promise<void>;
  /** Nothing runs or waits, and nothing is being read: forgetting it loses nothing the log does not hold. */
  idle(): boolean;
  /** The conversation's state as of the last event folded, at `position`; undefined before the first read. */
  seen(): Seen<ConversationState> | undefined;
};

/**
 * Runs one conversation's turns strictly one after another, from its event log. It keeps the
 * folded conversation in memory while its partition is owned (`ConversationFold`) and folds the
 * log strictly in order: each of its own appends brings back the events others stored before
 * it (the ingested inputs), so what it holds is always what folding the log from the start
 * gives. The agent loop reads its turn from that same fold, at each commit. Whatever this
 * process forgets is recovered by reading the log again.
 */
export function createConversationRunner(key: string, partition: number, deps: RunnerDeps): ConversationRunner {
  return new Runner(key, partition, deps);
}

/** The turn the runner's agent loop drives now. */
type TurnRun = {
  id: string;
  /** Aborted by a stop stored for the turn: its model request and tools end, then the turn ends `stopped`. */
  stop: AbortController;
  /** The turn as it ended, once a commit stored its end. */
  ended: TurnState | null;
  /** Raised once the turn is asked to finish early (an interrupt, a graceful stop): its tools see it. */
  windDown: AbortController;
};

/** Whether the turn was asked to finish early, so its tools should wind down. */
const windingDown = (turn: TurnState | null | undefined) => turn?.ending === 'interrupt' || turn?.ending === 'wind-down';

class Runner implements ConversationRunner {
  /** Aborted when the runner is let go (the partition moved, or shutdown): nothing more is stored. */
  private readonly released = new AbortController();
  private readonly fold: ConversationFold;
  /** The log may hold events not folded yet: read it. */
  private wanted = false;
  /** Something may be due: look again before the run ends. */
  private due = false;
  /** The run in flight (`runDue`), if one is. */
  private running: Promise<void> | null = null;
  private turn: TurnRun | null = null;

  constructor(
    private readonly key: string,
    private readonly partition: number,
    private readonly deps: RunnerDeps,
  ) {
    this.fold = new ConversationFold(key, deps);
  }

  poke(news?: ConversationNews): void {
    if (!news || !this.fold.take(news)) this.wanted = true;
    this.due = true;
    this.start();
  }

  stopTurn(): void {
    this.turn?.stop.abort(new Error('stop requested'));
    this.poke();
  }

  windDown(turn: string): void {
    if (this.turn?.id === turn) this.turn.windDown.abort(new Error('wind down'));
  }

  async abort(): Promise<void> {
    this.released.abort(new Error('conversation released'));
    await this.running;
  }

  seen(): Seen<ConversationState> | undefined {
    return this.fold.seen();
  }

  /** A parked turn is idle too: it is rows in the store, and a decision (or its deadline) wakes it. */
  idle(): boolean {
    const { conversation } = this.fold;
    return this.running === null && !this.wanted && !this.due && conversation !== null && !hasOpenWork(conversation.state);
  }

  /**
   * Starts a run unless one is in flight, once the code that poked it is done (a microtask: the
   * ingest hands what it stored to the relay first). Not a turn of the event loop later, as
   * until session 19: a chat's 202 no longer waits for that publication (it comes from the
   * commit's announcement), and the turn's first model request went out 2–4 ms later for it.
   */
  private start(): void {
    this.running ??= Promise.resolve()
      .then(() => this.runDue())
      .finally(() => {
        this.running = null;
        if ((this.wanted || this.due) && !this.released.signal.aborted) this.start();
      });
  }

  /** Runs what is due until nothing is; after a failure, reads the log again and goes on. */
  private async runDue(): Promise<void> {
    while (!this.released.signal.aborted) {
      try {
        if (!(await this.runNext())) return;
      } catch (error) {
        if (this.released.signal.aborted) return;
        await this.recover(error);
      }
    }
  }

  /**
   * Reads what the log holds when it may hold more, then runs the running turn to its end (or
   * until it parks), or starts the next one, or (nothing to run) stores a snapshot if one is
   * due. A parked turn runs nothing: its approvals past their deadline are denied first (then
   * it goes on), else it waits, holding nothing. Answers whether to look again.
   */
  private async runNext(): Promise<boolean> {
    this.due = false;
    if (!this.fold.conversation || this.wanted) {
      this.wanted = false;
      await this.fold.catchUp();
    }
    const current = this.fold.conversation ?? emptyConversation(this.deps.historyKept);
    if (current.running) {
      const { dueAt } = current.state;
      const now = new Date();
      if (dueAt !== null && Date.parse(dueAt) <= now.getTime() && (await this.append((state) => decideTimeouts(state, now))).stored.length > 0) return true;
      if (parked(current.state)) {
        await this.fold.snapshotIfDue();
        return this.wanted || this.due;
      }
      await this.runTurn(current, current.running);
      return true;
    }
    // The fold knows whether anything waits; the state under the lock decides what starts.
    if (current.state.queue.length > 0 && (await this.append((state) => startNextTurn(state, this.deps.newTurnId()))).stored.length > 0) return true;
    await this.fold.snapshotIfDue();
    return this.wanted || this.due;
  }

  /** Runs the agent loop on the running turn until it ends, or until a stop aborts it (the stop is then read from the log, and the turn ends `stopped`). */
  private async runTurn(current: Conversation, turn: TurnState): Promise<void> {
    const { key, deps } = this;
    const agent = deps.agentOf(current.state.agent);
    if (!agent) throw new Error(`this worker has no agent named ${current.state.agent}`);
    const run: TurnRun = (this.turn = { id: turn.id, stop: new AbortController(), ended: null, windDown: new AbortController() });
    if (windingDown(turn)) run.windDown.abort(new Error('wind down'));
    try {
      const signal = AbortSignal.any([this.released.signal, run.stop.signal]);
      hop('worker.turn-run');
      const systemPrompt = await agent.systemPrompt(key);
      // A span of the prompt's trace (see tracing/input-traces.ts); its commits store its context with their rows.
      const about = { parent: inputTraceContext(turn.prompt.id), attributes: { 'rudder.conversation': key, 'rudder.turn': turn.id, 'rudder.input': turn.prompt.id } };
      await inSpan(tracer, 'turn', about, () =>
        runTurn({
          conversation: key,
          // Read at each request, not copied: an MCP server's tools come and go while a turn runs.
          agent: {
            systemPrompt,
            maxSteps: agent.loop.maxSteps,
            context: agent.loop.context,
            todos: agent.loop.todos,
            get tools() {
              return agent.loop.tools;
            },
          },
          model: agent.model,
          // As the fold holds it at each request: a compaction at a step changes it mid-turn.
          history: () => {
            const now = this.fold.conversation ?? current;
            return { summary: now.summary?.text ?? null, earlier: recentHistory(now, agent.historyTurns) };
          },
          compact: (at) => this.compact(run, agent, at, signal),
          turn,
          commit: (events) => this.commit(run, events),
          // After a pause past the session timeout, the partition may be another worker's: ask the model only if it is still ours.
          beforeModelRequest: () => {
            hop('worker.model-request');
            return deps.held.check(this.partition);
          },
          // The worker's clock: each step's time (an approval's) is read from it, by the step.
          now: () => new Date(),
          signal,
          windDown: run.windDown.signal,
          pending: () => this.fold.conversation?.state.queue.length ?? 0,
          // Nothing waits that the commit of a step's result could take (a landed steer) or end it with.
          quiet: () => {
            const state = this.fold.conversation?.state;
            return state !== undefined && state.steers.length === 0 && state.undecided === null && state.ending === null;
          },
          onToken: (step, text) => deps.onToken({ conversation: key, turn: turn.id, step, text }),
          onAhead: (outcome) => deps.onAhead?.(outcome),
        }),
      );
    } catch (error) {
      if (!run.stop.signal.aborted || this.released.signal.aborted) throw error;
      this.wanted = true;
    } finally {
      this.turn = null;
    }
  }

  /**
   * Compacts the history at a step of the running turn (`compaction`): the summary request,
   * then its event committed as a step (which takes the steers that came meanwhile: they wait
   * for the step's model request, never entering the summary's). A summary that cannot be made
   * (the model failed, say) is logged and the step goes on without it; an abort ends the run.
   */
  private async compact(run: TurnRun, agent: RunnableAgent, at: { turn: TurnState; step: number; keep: number }, signal: AbortSignal): Promise<StoredTurn | null> {
    const { deps, key } = this;
    const conversation = this.fold.conversation;
    if (!conversation) return null;
    await deps.held.check(this.partition);
    let event: DomainEvent | null;
    try {
      event = await compaction({ pool: deps.pool, key, conversation, keep: at.keep, turn: at.turn, step: at.step, budget: agent.loop.context, model: agent.model, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      deps.log.warn('compacting the history failed; the step goes on without it', { conversation: key, turn: at.turn.id, error: String(error) });
      return null;
    }
    if (!event) return null;
    const stored = await this.commit(run, [event]);
    deps.fault('after-compaction-stored');
    return stored;
  }

  /**
   * A commit of the running turn: the store may take steers at a step, or end the turn there.
   * Answers the turn as the fold holds it after the commit: every event folded since the loop's
   * last commit is in it, in log order — what others stored before it too (a stop, say),
   * whether it came back with this write or as news.
   */
  private async commit(run: TurnRun, events: DomainEvent[]): Promise<StoredTurn> {
    const { fault } = this.deps;
    if (events.some((e) => e.type === 'model.replied')) this.deps.flushTokens();
    const turn = this.fold.conversation?.running;
    if (events.some((e) => e.type === 'tool.ended')) fault('before-tool-result-stored');
    hop('worker.commit');
    const { stored, ended } = await this.append((state) => (turn ? decideTurnCommit(state, turn, events) : events));
    hop('worker.committed');
    if (stored.some((e) => e.type === 'model.replied' && e.data.toolCalls.length > 0)) fault('after-reply-stored');
    if (stored.some((e) => e.type === 'tool.ended')) fault('after-tool-result-stored');
    if (stored.some((e) => e.type === 'steer.taken')) fault('after-steer-taken');
    if (ended?.id === run.id) run.ended = ended;
    const now = this.fold.conversation?.running;
    if (now?.id === run.id && windingDown(now)) run.windDown.abort(new Error('wind down'));
    if (now?.id === run.id) return { turn: now, ended: false };
    if (run.ended) return { turn: run.ended, ended: true };
    throw new Error(`turn ${run.id} is no longer running, and its end was not folded`);
  }

  /**
   * Appends what `decide` makes of the state under the conversation's lock and folds it in,
   * after what others stored before it, in log order. Answers what it stored, and the running
   * turn as it ended if what was folded ended it.
   */
  private async append(decide: (state: ConversationState) => DomainEvent[]): Promise<{ stored: ConversationEvent[]; ended: TurnState | null }> {
    const { deps } = this;
    // Holding the fold as of the last event, the write is one statement unless the log moved meanwhile.
    const seen = this.fold.seen() ?? { position: 0 };
    const sentAt = deps.held.now();
    const written = await appendToConversation(deps.pool, conversationRules, this.key, deps.epochs(), decide, seen, deps.writeUnchanged, { announce: deps.announce });
    deps.held.proven(this.partition, sentAt);
    const endedBefore = this.fold.apply(written.earlier);
    const ended = this.fold.apply(written.stored) ?? endedBefore;
    deps.relay.enqueue(written);
    const dueAt = this.fold.conversation?.state.dueAt;
    if (dueAt) deps.wakeAt?.(dueAt);
    return { stored: written.stored, ended };
  }

  /** After a failure: what is stored is the truth, so the fold is read again; a fenced writer waits first, as does one that failed otherwise. */
  private async recover(error: unknown): Promise<void> {
    const { log } = this.deps;
    this.fold.forget();
    if (error instanceof AlreadyStoredError) {
      log.warn('a write was already stored; reloading the conversation', { conversation: this.key });
      return;
    }
    if (error instanceof FencedError) {
      this.deps.onFenced();
      // Another worker owns the partition now (or an assignment is being taken): write nothing, wait.
      log.warn('fenced: this worker does not hold the partition; nothing was written', { conversation: this.key, detail: error.message });
      await sleep(this.deps.retryMs);
      return;
    }
    log.error('conversation failed; retrying from the log', { conversation: this.key, error: String(error) });
    await sleep(this.deps.retryMs);
  }
}
