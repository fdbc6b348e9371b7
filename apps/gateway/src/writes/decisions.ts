import { Inject, Injectable } from '@nestjs/common';
import type { ConversationEvent } from '@rudder/contracts';
import { Positions } from '../consistency/positions';
import { CompanionClient, type CompanionStatus, type InputState, type Rejection } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';
import { LiveEvents } from '../live/live-events';
import { DEFAULT_DECISION_TIMEOUT_MS, OPTIONS, type GatewayOptions } from '../tokens';

/** `Retry-After` of a 429 `queue_full`: long enough for a step or two to take what waits. */
export const RETRY_AFTER_SECONDS = 5;

/** `Retry-After` of a 503 `guard_failed`: a guard's dependency that failed may be back soon; the retry is guarded again. */
export const GUARD_RETRY_AFTER_SECONDS = 2;

/** How a refusal of the worker (`input.rejected`'s `code`) is answered: the one place it is mapped. */
const REFUSALS = {
  busy: { error: 'conflict', hint: 'send it with another onBusy (enqueue, interrupt or rollback), or once the turn has ended' },
  precondition_failed: { error: 'precondition_failed', hint: "read the conversation's status (lastInputId) and send it again if it still applies" },
  queue_full: { error: 'queue_full', hint: `nothing was queued; send it again in ${RETRY_AFTER_SECONDS} s, or retract a pending input first` },
  unknown_agent: { error: 'unknown_agent', hint: 'name an agent this deployment runs, or none for the default one' },
  agent_mismatch: { error: 'agent_mismatch', hint: "a conversation is answered by its first input's agent, or the one its last handoff chose (the status's agent): name that one, or none" },
  refused: { error: 'refused', hint: "the agent's input guard refused it; nothing of it reaches the model" },
  forbidden: { error: 'forbidden', hint: 'only the owner of the conversation writes to it' },
} as const satisfies Record<Rejection['code'], { error: GatewayError['code']; hint: string }>;

/**
 * Waiting for the worker's decision on an input the gateway produced (or found undecided):
 * the one write path (`Writes.submit`) waits with it. The worker decides every input under the
 * conversation's lock and answers with an event on `agent.events`; the gateway's live
 * consumer hands it over (`watch`, which must be called before the input is produced, so the
 * decision cannot slip past).
 */
@Injectable()
export class Decisions {
  readonly timeoutMs: number;

  constructor(
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(OPTIONS) options: GatewayOptions,
    @Inject(Positions) private readonly positions: Positions,
  ) {
    this.timeoutMs = options.decisionTimeoutMs ?? DEFAULT_DECISION_TIMEOUT_MS;
  }

  /**
   * Listens for the first event of the conversation that `pick` turns into a value
   * (`LiveEvents.watch`), among events that name one of `ids` (what was sent: `pick` must
   * answer only events naming them). That event is the worker's decision: its position is
   * noted, so the answer carries it (`Rudder-Position`) and later reads through this gateway
   * reflect it. `pick` is told whether the event arrived after the watch began (`live`) or is
   * one of the recent events it starts from: a `guard.failed` answers only the send it follows,
   * never a later send of the id (which is guarded again).
   */
  watch<T>(
    key: string,
    ids: readonly string[],
    pick: (event: ConversationEvent, live: boolean) => T | undefined,
  ): { result: Promise<T>; seen: T | undefined; cancel(): void } {
    let live = false;
    const watched = this.live.watch(key, ids, (event) => {
      const value = pick(event, live);
      if (value !== undefined) this.positions.note(key, event.position);
      return value;
    });
    // LiveEvents.watch reads the recent events before it returns; what comes after is live.
    live = true;
    return watched;
  }

  /**
   * The answer to a chat or steer whose guard failed (`guard.failed`): 503 `guard_failed` with
   * `Retry-After`. Nothing was decided: unlike a refusal, the same id sent again is guarded again.
   */
  guardFailed(input: { id: string; kind: string }, reason: string): GatewayError {
    return new GatewayError(
      'guard_failed',
      `${input.kind} ${input.id} was not decided: ${reason} (in ${GUARD_RETRY_AFTER_SECONDS} s or later)`,
      { id: input.id, reason, retryAfter: GUARD_RETRY_AFTER_SECONDS },
      { 'retry-after': String(GUARD_RETRY_AFTER_SECONDS) },
    );
  }

  /** The decision, or the error `late` makes (a 503 saying what was sent) once `timeoutMs` has passed. */
  async within<T>(decision: Promise<T>, late: (seconds: number) => GatewayError): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(late(Math.round(this.timeoutMs / 100) / 10)), this.timeoutMs);
    });
    try {
      return await Promise.race([decision, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The answer to a chat or steer the worker refused: busy 409 `conflict`, precondition_failed
   * 412, queue_full 429 with `Retry-After` and the conversation's current counts (from the
   * companion's status now; zero counts when it does not answer).
   * The id is answered once: the same id again gets this same refusal, so a retry needs a new id.
   */
  async rejected(key: string, input: { id: string; kind: string }, rejection: Rejection): Promise<GatewayError> {
    const { error, hint } = REFUSALS[rejection.code];
    const message = `${input.kind} ${input.id} was refused: ${rejection.message}; ${hint} (a new id is needed: this one is answered by this refusal)`;
    if (rejection.code !== 'queue_full') return new GatewayError(error, message, { id: input.id, reason: rejection.message });
    const status = await this.companion.status(key).catch(() => null);
    return new GatewayError(
      error,
      message,
      { id: input.id, reason: rejection.message, counts: countsOf(status), retryAfter: RETRY_AFTER_SECONDS },
      { 'retry-after': String(RETRY_AFTER_SECONDS) },
    );
  }
}

/** What waits in a conversation: steers for the running turn, follow-ups, and their characters (code points) together. */
export function countsOf(status: Pick<CompanionStatus, 'steering' | 'queue'> | null): { steering: number; queue: number; chars: number } {
  const waiting = [...(status?.steering ?? []), ...(status?.queue ?? [])];
  return {
    steering: status?.steering.length ?? 0,
    queue: status?.queue.length ?? 0,
    chars: waiting.reduce((sum, item) => sum + [...item.text].length, 0),
  };
}

const NO_LONGER_PENDING: Record<InputState, string> = {
  delivered: 'was already delivered: its turn started, or a running turn took it',
  retracted: 'was already retracted',
  discarded: 'was discarded by a stop',
  rejected: 'was refused when it was sent, so it never waited',
  collapsed: 'was collapsed into another follow-up by the queue policy: that one’s turn answers it',
  pending: 'is no longer pending: it was delivered, retracted or discarded meanwhile',
};

/**
 * 409 `conflict` for a retraction or a promotion of an input that no longer waits, saying
 * what became of it (`state`: as the companion tells, or as the worker's refusal said).
 */
export function notPending(what: 'retracted' | 'promoted', id: string, state: InputState): GatewayError {
  return new GatewayError('conflict', `input ${id} cannot be ${what}: it ${NO_LONGER_PENDING[state]}`, { id, state });
}
