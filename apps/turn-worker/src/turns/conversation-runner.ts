import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { runningAgent, type TurnState } from '@rudder/agent';
import { decideDue, hasOpenWork, isDue, parked, startNextTurn, type ConversationState } from '@rudder/conversation';
import { AlreadyStoredError, FencedError, type Seen } from '@rudder/event-store';
import type { ConversationNews } from '../ingest/ingest-inputs';
import { emptyConversation, type Conversation } from './conversation';
import { ConversationFold } from './conversation-fold';
import type { RunnerServices } from './runner-services';
import { TurnRun, type TurnRunner } from './turn-run';

/**
 * Runs one conversation's turns strictly one after another, from its event log. It keeps the
 * folded conversation in memory while its partition is owned (`ConversationFold`) and folds the
 * log strictly in order: each of its own appends brings back the events others stored before
 * it (the ingested inputs), so what it holds is always what folding the log from the start
 * gives. The agent loop reads its turn from that same fold, at each commit (`TurnRun`). Whatever
 * this process forgets is recovered by reading the log again.
 *
 * It reads top-down: `poke → start → runDue → runNext → runTurn (TurnRun) → append → recover`.
 */
export class ConversationRunner implements TurnRunner {
  readonly fold: ConversationFold;
  /** Aborted when the runner is let go (the partition moved, or shutdown): nothing more is stored. */
  private readonly released = new AbortController();
  /** How many earlier turns the fold keeps (the largest `history.turns` of the agents). */
  private readonly historyKept: number | null;
  /** The log may hold events not folded yet: read it. */
  private wanted = false;
  /** Something may be due: look again before the run ends. */
  private due = false;
  /** The run in flight (`runDue`), if one is. */
  private running: Promise<void> | null = null;
  /** The turn the agent loop drives now, if it does. */
  private turn: TurnRun | null = null;
  /** What is due, being decided beside the running turn (`decideBeside`), if it is. */
  private beside: Promise<void> | null = null;

  constructor(
    readonly key: string,
    readonly partition: number,
    private readonly services: RunnerServices,
  ) {
    const { store, agents, options } = services;
    this.historyKept = agents.historyKept();
    this.fold = new ConversationFold(key, { pool: store.poolFor(partition), historyKept: this.historyKept, snapshotEvery: options.snapshotEvery, log: options.log });
  }

  /**
   * New inputs may be stored: run what is due. With `news` (what one write just stored, and the
   * position before it) a runner holding its conversation as of exactly that position folds it
   * at once; otherwise it reads the log.
   */
  poke(news?: ConversationNews): void {
    if (!news || !this.fold.take(news)) this.wanted = true;
    this.due = true;
    this.start();
    if (this.turn !== null) this.decideBeside();
  }

  /**
   * A turn runs here, and the run decides what is due only between turns: a schedule's time that
   * comes meanwhile is decided now, beside it, under the conversation's lock as any write (so a
   * firing under `onBusy: steer` lands on the running turn while it runs, and one under `enqueue`
   * waits behind it). What it stores reaches the fold with the turn's next commit, as an ingested
   * input does. A deadline the fold learns of while the turn runs (a schedule made during a long
   * tool call) is handed to the worker's one timer here, which wakes it at its time: `runNext`,
   * which hands it over between turns, does not run until the turn ends.
   */
  private decideBeside(): void {
    const seen = this.fold.seen();
    const now = new Date();
    if (this.beside !== null || seen?.state === undefined) return;
    if (!isDue(seen.state, now)) {
      if (seen.state.dueAt !== null) this.services.store.wakeAt(seen.state.dueAt);
      return;
    }
    const { store, agents, options } = this.services;
    this.beside = store
      .append(this.key, this.partition, seen, (state) => decideDue(state, now, agents, this.key))
      .then((written) => {
        store.handOver(written, this.partition, undefined);
        this.decided(written.stored);
        this.wanted = true;
      })
      .catch((error: unknown) => {
        if (!this.released.signal.aborted) options.log.warn('deciding what is due beside the running turn failed; the next wake decides it', { conversation: this.key, error: String(error) });
      })
      .finally(() => {
        this.beside = null;
      });
  }

  /** What was due is stored: a test may stop the worker right after a firing (`after-firing-decided`). */
  private decided(stored: readonly ConversationEvent[]): void {
    if (stored.some((e) => e.type === 'schedule.fired')) this.services.options.fault('after-firing-decided');
  }

  /** Decides, under the lock, what is due at `now` (approvals timed out, schedules' firings): whether it stored anything. */
  private async decideDue(now: Date): Promise<boolean> {
    const { stored } = await this.append((state) => decideDue(state, now, this.services.agents, this.key));
    this.decided(stored);
    return stored.length > 0;
  }

  /** A stop was stored for the running turn: abort its model request and tools, then end it. */
  stopTurn(): void {
    this.turn?.stop();
    this.poke();
  }

  /** An interrupt or a graceful stop was stored for `turn`: if it runs here, its tools see `windDown`. */
  windDown(turn: string): void {
    if (this.turn?.id === turn) this.turn.windDown();
  }

  /** Stops the turn in flight without storing anything more (the partition moved, or shutdown). */
  async abort(): Promise<void> {
    this.released.abort(new Error('conversation released'));
    await this.running;
  }

  /** The conversation's state as of the last event folded, at `position`; undefined before the first read. */
  seen(): Seen<ConversationState> | undefined {
    return this.fold.seen();
  }

  /**
   * Nothing runs or waits, and nothing is being read: forgetting it loses nothing the log does
   * not hold. A parked turn is idle too: it is rows in the store, and a decision (or its deadline) wakes it.
   */
  idle(): boolean {
    const { conversation } = this.fold;
    return this.running === null && !this.wanted && !this.due && conversation !== null && !hasOpenWork(conversation.state);
  }

  /**
   * Starts a run unless one is in flight, once the code that poked it is done (a microtask: the
   * ingest hands what it stored to the relay first), not a turn of the event loop later: a
   * chat's 202 does not wait for that publication (it comes from the commit's announcement),
   * and the turn's first model request would go out 2–4 ms later for it.
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
   * Reads what the log holds when it may hold more, then decides what is due (approvals past
   * their deadline are denied, schedules whose time came fire), then runs the running turn to its
   * end (or until it parks), or starts the next one, or (nothing to run) stores a snapshot if one
   * is due. A parked turn runs nothing: it waits, holding nothing. Answers whether to look again.
   */
  private async runNext(): Promise<boolean> {
    this.due = false;
    if (!this.fold.conversation || this.wanted) {
      this.wanted = false;
      await this.fold.catchUp();
    }
    const current = this.fold.conversation ?? emptyConversation(this.historyKept);
    const now = new Date();
    if (isDue(current.state, now) && (await this.decideDue(now))) return true;
    // Something later is due (a schedule an ingested input made): the worker's one timer wakes it then.
    if (current.state.dueAt !== null) this.services.store.wakeAt(current.state.dueAt);
    if (current.running) {
      if (parked(current.state)) {
        await this.fold.snapshotIfDue();
        return this.wanted || this.due;
      }
      await this.runTurn(current, current.running);
      return true;
    }
    // The fold knows whether anything waits; the state under the lock decides what starts.
    if (current.state.queue.length > 0 && (await this.append((state) => startNextTurn(state, randomUUID(), new Date()))).stored.length > 0) return true;
    await this.fold.snapshotIfDue();
    return this.wanted || this.due;
  }

  /** Runs the agent loop on the running turn until it ends, or until a stop aborts it (the stop is then read from the log, and the turn ends `stopped`). */
  private async runTurn(current: Conversation, turn: TurnState): Promise<void> {
    const name = runningAgent(turn, current.state.agent);
    const agent = this.services.agents.get(name);
    if (!agent) throw new Error(`this worker has no agent named ${name}`);
    const run = (this.turn = new TurnRun(turn, this, this.services));
    try {
      await run.run(agent, current, this.released.signal);
    } catch (error) {
      if (!run.stopped || this.released.signal.aborted) throw error;
      this.wanted = true;
    } finally {
      this.turn = null;
    }
  }

  /**
   * Appends what `decide` makes of the state under the conversation's lock and folds it in,
   * after what others stored before it, in log order. Answers what it stored, and the running
   * turn as it ended if what was folded ended it.
   */
  async append(decide: (state: ConversationState) => DomainEvent[]): Promise<{ stored: ConversationEvent[]; ended: TurnState | null }> {
    const { store } = this.services;
    // Holding the fold as of the last event, the write is one statement unless the log moved meanwhile.
    const written = await store.append(this.key, this.partition, this.fold.seen() ?? { position: 0 }, decide);
    const endedBefore = this.fold.apply(written.earlier);
    const ended = this.fold.apply(written.stored) ?? endedBefore;
    store.handOver(written, this.partition, this.fold.conversation?.state.dueAt);
    return { stored: written.stored, ended };
  }

  /** After a failure: what is stored is the truth, so the fold is read again; a fenced writer waits first, as does one that failed otherwise. */
  private async recover(error: unknown): Promise<void> {
    const { metrics, options } = this.services;
    const { log } = options;
    this.fold.forget();
    if (error instanceof AlreadyStoredError) {
      log.warn('a write was already stored; reloading the conversation', { conversation: this.key });
      return;
    }
    if (error instanceof FencedError) {
      metrics.fenced();
      // Another worker owns the partition now (or an assignment is being taken): write nothing, wait.
      log.warn('fenced: this worker does not hold the partition; nothing was written', { conversation: this.key, detail: error.message });
      await sleep(options.retryMs);
      return;
    }
    log.error('conversation failed; retrying from the log', { conversation: this.key, error: String(error) });
    await sleep(options.retryMs);
  }
}
