import type { ConversationEvent, DomainEvent } from '@rudder/contracts';
import { runTurn, type Agent, type ModelClient } from '@rudder/agent';
import { AlreadyStoredError, appendToConversation, FencedError, readConversation, type ConversationHead, type Epochs, type OutboxRelay } from '@rudder/event-store';
import type { Log, Pool } from '@rudder/runtime';
import type { FaultPoint } from '../fault-points';
import { emptyConversation, evolve, type Conversation } from '../conversation/conversation';
import { startNextTurn, takeSteersAtStep } from '../conversation/decisions';

export type RunnerDeps = {
  pool: Pool;
  /** The epochs this worker holds now; every write is checked against them. */
  epochs(): Epochs;
  relay: OutboxRelay;
  agent: Agent;
  model: ModelClient;
  onToken(token: { conversation: string; turn: string; step: number; text: string }): void;
  /** Sends the tokens held back; awaited before a commit so tokens go out before their step's events. */
  flushTokens(): Promise<void>;
  newTurnId(): string;
  fault(point: FaultPoint): void;
  log: Log;
  retryMs: number;
};

export type ConversationRunner = {
  /** New inputs may be stored: read them and run what is due. */
  poke(): void;
  /** A stop was stored for the running turn: abort its model request and tools, then end it. */
  stopTurn(): void;
  /** Stops the turn in flight without storing anything more (the partition moved, or shutdown). */
  abort(): Promise<void>;
};

/**
 * Runs one conversation's turns strictly one after another, from its event log. It keeps the
 * folded conversation in memory while its partition is owned and reads only new events when
 * poked; every write goes through the store, so whatever this process forgets is recovered by
 * reading the log again.
 */
export function createConversationRunner(key: string, deps: RunnerDeps): ConversationRunner {
  const { pool, relay, log } = deps;
  const controller = new AbortController();
  let turnController: AbortController | null = null;
  let state: Conversation | null = null;
  let readUpTo = 0; // every event at or below this position is folded into `state`
  const ownWrites = new Set<number>(); // positions above readUpTo already folded (our own appends)
  let wanted = false;
  let loop: Promise<void> | null = null;

  const apply = (event: ConversationEvent) => {
    state = evolve(state ?? emptyConversation(), event);
  };

  const catchUp = async () => {
    const fresh = await readConversation(pool, key, state ? readUpTo : 0);
    if (!state) state = emptyConversation();
    for (const event of fresh) {
      if (!ownWrites.has(event.position)) apply(event);
      readUpTo = Math.max(readUpTo, event.position);
    }
    for (const position of ownWrites) if (position <= readUpTo) ownWrites.delete(position);
  };

  /** Appends what `decide` makes of the head under the conversation's lock, and folds it in. */
  const append = async (decide: (head: ConversationHead) => DomainEvent[]) => {
    const stored = await appendToConversation(pool, key, deps.epochs(), decide);
    for (const event of stored) {
      ownWrites.add(event.position);
      apply(event);
    }
    relay.enqueue(stored);
    return stored;
  };

  /** A commit of the running turn: the store may take steers at a step, or end an interrupted turn there. */
  const commit = async (events: DomainEvent[]): Promise<DomainEvent[]> => {
    if (events.some((e) => e.type === 'model.replied')) await deps.flushTokens();
    const turn = state?.running;
    if (events.some((e) => e.type === 'tool.ended')) deps.fault('before-tool-result-stored');
    const stored = await append((head) => (turn ? takeSteersAtStep(head, turn, events) : events));
    if (stored.some((e) => e.type === 'model.replied' && e.data.toolCalls.length > 0)) deps.fault('after-reply-stored');
    if (stored.some((e) => e.type === 'tool.ended')) deps.fault('after-tool-result-stored');
    if (stored.some((e) => e.type === 'steer.taken')) deps.fault('after-steer-taken');
    return stored;
  };

  const runDue = async () => {
    while (!controller.signal.aborted) {
      try {
        if (!state || wanted) {
          wanted = false;
          await catchUp();
        }
        const current: Conversation = state ?? emptyConversation();
        if (current.running) {
          const turn = current.running;
          turnController = new AbortController();
          try {
            await runTurn({
              agent: deps.agent,
              model: deps.model,
              history: current.history,
              turn,
              commit,
              signal: AbortSignal.any([controller.signal, turnController.signal]),
              onToken: (step, text) => deps.onToken({ conversation: key, turn: turn.id, step, text }),
            });
          } catch (error) {
            // A stop aborted the turn: read the stop from the log; the turn then ends `stopped`.
            if (!turnController.signal.aborted || controller.signal.aborted) throw error;
            wanted = true;
          } finally {
            turnController = null;
          }
          continue;
        }
        // The fold knows whether anything waits; the head, under the lock, decides what starts.
        if (current.queue.length > 0 && (await append((head) => startNextTurn(head, deps.newTurnId()))).length > 0) continue;
        if (!wanted) return;
      } catch (error) {
        if (controller.signal.aborted) return;
        // What is stored is the truth: forget the fold and read it again.
        state = null;
        readUpTo = 0;
        ownWrites.clear();
        if (error instanceof AlreadyStoredError) {
          log.warn('a write was already stored; reloading the conversation', { conversation: key });
          continue;
        }
        if (error instanceof FencedError) {
          // Another worker owns the partition now (or an assignment is being taken): write nothing, wait.
          log.warn('fenced: this worker does not hold the partition; nothing was written', { conversation: key, detail: error.message });
          await new Promise((resolve) => setTimeout(resolve, deps.retryMs));
          continue;
        }
        log.error('conversation failed; retrying from the log', { conversation: key, error: String(error) });
        await new Promise((resolve) => setTimeout(resolve, deps.retryMs));
      }
    }
  };

  return {
    poke() {
      wanted = true;
      loop ??= runDue().finally(() => {
        loop = null;
        if (wanted && !controller.signal.aborted) this.poke();
      });
    },
    stopTurn() {
      turnController?.abort(new Error('stop requested'));
      this.poke();
    },
    async abort() {
      controller.abort(new Error('conversation released'));
      await loop;
    },
  };
}
