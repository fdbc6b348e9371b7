import { setImmediate as nextTurnOfTheLoop, setTimeout as sleep } from 'node:timers/promises';
import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { runTurn } from '@rudder/agent';
import { CONVERSATION_FOLD_VERSION, conversationRules, decideTurnCommit, emptyConversation, evolveConversation, fromSnapshot, recentHistory, startNextTurn, type Conversation, type ConversationState } from '@rudder/conversation';
import { AlreadyStoredError, appendToConversation, FencedError, readConversation, readConversationFromSnapshot, storeSnapshot, type Epochs, type OutboxRelay, type Seen, type UnchangedWriter } from '@rudder/event-store';
import { inSpan, tracerOf, type Log, type Pool } from '@rudder/runtime';
import type { RunnableAgent } from '../agents/agents';
import type { FaultPoint } from '../fault-points';
import type { ConversationNews } from '../ingest/ingest-inputs';
import { inputTraceContext } from '../tracing/input-traces';
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
  /** The agent that answers a conversation (null: not opened yet, the default). */
  agentOf(name: string | null): RunnableAgent | undefined;
  onToken(token: { conversation: string; turn: string; step: number; text: string }): void;
  /** How many earlier turns a fold keeps (the largest `history.turns` of the agents; null: every one). */
  historyKept: number | null;
  /** Sends the tokens held back; awaited before a commit so tokens go out before their step's events. */
  flushTokens(): Promise<void>;
  newTurnId(): string;
  fault(point: FaultPoint): void;
  log: Log;
  /** A write of this runner was fenced (counted by the worker's metrics). */
  onFenced(): void;
  retryMs: number;
  /** A snapshot of the fold is stored once the log has grown by this many events since the last one. */
  snapshotEvery: number;
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
  /** Stops the turn in flight without storing anything more (the partition moved, or shutdown). */
  abort(): Promise<void>;
  /** Nothing runs or waits, and nothing is being read: forgetting it loses nothing the log does not hold. */
  idle(): boolean;
  /** The conversation's state as of the last event folded, at `position`; undefined before the first read. */
  seen(): Seen<ConversationState> | undefined;
};

/**
 * Runs one conversation's turns strictly one after another, from its event log. It keeps the
 * folded conversation in memory while its partition is owned and folds the log strictly in
 * order: each of its own appends brings back the events others stored before it (the ingested
 * inputs), so what it holds is always what folding the log from the start gives. Whatever this
 * process forgets is recovered by reading the log again.
 */
export function createConversationRunner(key: string, partition: number, deps: RunnerDeps): ConversationRunner {
  const { pool, relay, log } = deps;
  const controller = new AbortController();
  let turnController: AbortController | null = null;
  let conversation: Conversation | null = null;
  let readUpTo = 0; // every event at or below this position is folded into `conversation`
  let sinceSnapshot = 0; // events folded since the latest snapshot this runner read or stored (positions are global: not their difference)
  let wanted = false; // the log may hold events not folded yet: read it
  let due = false; // something may be due: look again before the loop ends
  let loop: Promise<void> | null = null;
  /** While a turn runs: the events folded since its loop last heard (its commits give them to it, in log order). */
  let forLoop: ConversationEvent[] | null = null;

  const apply = (events: readonly ConversationEvent[]) => {
    for (const event of events) {
      if (event.position <= readUpTo) continue;
      conversation = evolveConversation(conversation ?? emptyConversation(deps.historyKept), event);
      readUpTo = event.position;
      sinceSnapshot += 1;
      forLoop?.push(event);
    }
  };

  /**
   * Folds `news` if it follows exactly what is held; false otherwise (nothing held: the first
   * read starts from the snapshot, and a row's `last_position` alone never stands for an empty log).
   */
  const take = (news: ConversationNews): boolean => {
    if (conversation === null || readUpTo !== news.after) return false;
    apply(news.events);
    return true;
  };

  const catchUp = async () => {
    if (conversation) return apply(await readConversation(pool, key, readUpTo));
    // From the start: the latest snapshot, then only the events after it; the whole log when
    // the snapshot kept fewer earlier turns than this worker's agents need.
    const { snapshot, events } = await readConversationFromSnapshot(pool, key, CONVERSATION_FOLD_VERSION);
    const held = snapshot && fromSnapshot(snapshot.fold as Conversation, deps.historyKept);
    conversation = held || emptyConversation(deps.historyKept);
    readUpTo = held ? snapshot.position : 0;
    sinceSnapshot = 0;
    apply(snapshot && !held ? await readConversation(pool, key, 0) : events);
  };

  /** Between turns, once the log has grown by `snapshotEvery` events: a snapshot of the fold, so a next read is short. */
  const snapshotIfDue = async () => {
    if (!conversation || conversation.running || sinceSnapshot < deps.snapshotEvery) return;
    try {
      await storeSnapshot(pool, key, { position: readUpTo, version: CONVERSATION_FOLD_VERSION, fold: conversation });
      sinceSnapshot = 0;
    } catch (error) {
      // Tried again after as many more events, not between every turn: a snapshot the database
      // refuses must not add a failing statement to each of the conversation's turns.
      sinceSnapshot = 0;
      log.warn('storing a snapshot failed; the next read starts from an older one (or the log)', { conversation: key, error: String(error) });
    }
  };

  /** Appends what `decide` makes of the state under the conversation's lock and folds it in, after what others stored before it, in log order; answers what it stored. */
  const append = async (decide: (state: ConversationState) => DomainEvent[]) => {
    // Holding the fold as of the last event, the write is one statement unless the log moved meanwhile.
    const seen = { position: readUpTo, state: conversation?.state };
    const sentAt = deps.held.now();
    const written = await appendToConversation(pool, conversationRules, key, deps.epochs(), decide, seen, deps.writeUnchanged);
    deps.held.proven(partition, sentAt);
    apply(written.earlier);
    apply(written.stored);
    relay.enqueue(written);
    return written.stored;
  };

  /**
   * A commit of the running turn: the store may take steers at a step, or end the turn there.
   * The loop is given every event folded since its last commit, in log order: what others
   * stored before it too (a stop, say), whether it came back with this write or as news.
   */
  const commit = async (events: DomainEvent[]): Promise<DomainEvent[]> => {
    if (events.some((e) => e.type === 'model.replied')) await deps.flushTokens();
    const turn = conversation?.running;
    if (events.some((e) => e.type === 'tool.ended')) deps.fault('before-tool-result-stored');
    const stored = await append((state) => (turn ? decideTurnCommit(state, turn, events) : events));
    if (stored.some((e) => e.type === 'model.replied' && e.data.toolCalls.length > 0)) deps.fault('after-reply-stored');
    if (stored.some((e) => e.type === 'tool.ended')) deps.fault('after-tool-result-stored');
    if (stored.some((e) => e.type === 'steer.taken')) deps.fault('after-steer-taken');
    const given = forLoop ?? [];
    forLoop = [];
    return given;
  };

  const runDue = async () => {
    while (!controller.signal.aborted) {
      try {
        due = false;
        if (!conversation || wanted) {
          wanted = false;
          await catchUp();
        }
        const current: Conversation = conversation ?? emptyConversation(deps.historyKept);
        if (current.running) {
          const turn = current.running;
          const agent = deps.agentOf(current.state.agent);
          if (!agent) throw new Error(`this worker has no agent named ${current.state.agent}`);
          turnController = new AbortController();
          forLoop = [];
          try {
            const signal = AbortSignal.any([controller.signal, turnController.signal]);
            const systemPrompt = await agent.systemPrompt(key);
            // A span of the prompt's trace (see tracing/input-traces.ts); its commits store its context with their rows.
            const about = { parent: inputTraceContext(turn.prompt.id), attributes: { 'rudder.conversation': key, 'rudder.turn': turn.id, 'rudder.input': turn.prompt.id } };
            await inSpan(tracer, 'turn', about, () =>
              runTurn({
                conversation: key,
                agent: { ...agent.loop, systemPrompt },
                model: agent.model,
                history: recentHistory(current, agent.historyTurns),
                turn,
                commit,
                // After a pause past the session timeout, the partition may be another worker's: ask the model only if it is still ours.
                beforeModelRequest: () => deps.held.check(partition),
                signal,
                onToken: (step, text) => deps.onToken({ conversation: key, turn: turn.id, step, text }),
              }),
            );
          } catch (error) {
            // A stop aborted the turn: read the stop from the log; the turn then ends `stopped`.
            if (!turnController.signal.aborted || controller.signal.aborted) throw error;
            wanted = true;
          } finally {
            turnController = null;
            forLoop = null;
          }
          continue;
        }
        // The fold knows whether anything waits; the state under the lock decides what starts.
        if (current.state.queue.length > 0 && (await append((state) => startNextTurn(state, deps.newTurnId()))).length > 0) continue;
        await snapshotIfDue();
        if (!wanted && !due) return;
      } catch (error) {
        if (controller.signal.aborted) return;
        // What is stored is the truth: forget the fold and read it again.
        conversation = null;
        readUpTo = sinceSnapshot = 0;
        if (error instanceof AlreadyStoredError) {
          log.warn('a write was already stored; reloading the conversation', { conversation: key });
          continue;
        }
        if (error instanceof FencedError) {
          deps.onFenced();
          // Another worker owns the partition now (or an assignment is being taken): write nothing, wait.
          log.warn('fenced: this worker does not hold the partition; nothing was written', { conversation: key, detail: error.message });
          await sleep(deps.retryMs);
          continue;
        }
        log.error('conversation failed; retrying from the log', { conversation: key, error: String(error) });
        await sleep(deps.retryMs);
      }
    }
  };

  // A run starts on the next turn of the event loop: what the ingest that poked it stored is
  // handed to the relay first, and that publication (a chat's 202 waits for it) goes out before
  // the turn's first model request is built and sent (chat-accept: stored → 202 p50 11–12 → 9–10 ms).
  const run = () => {
    loop ??= nextTurnOfTheLoop().then(runDue).finally(() => {
      loop = null;
      if ((wanted || due) && !controller.signal.aborted) run();
    });
  };

  return {
    poke(news) {
      if (!news || !take(news)) wanted = true;
      due = true;
      run();
    },
    stopTurn() {
      turnController?.abort(new Error('stop requested'));
      this.poke();
    },
    async abort() {
      controller.abort(new Error('conversation released'));
      await loop;
    },
    seen() {
      return conversation === null ? undefined : { position: readUpTo, state: conversation.state };
    },
    idle() {
      return loop === null && !wanted && !due && conversation !== null && conversation.running === null && conversation.state.queue.length === 0;
    },
  };
}
