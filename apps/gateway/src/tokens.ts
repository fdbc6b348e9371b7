import type { Log } from '@rudder/runtime';

/**
 * Injection tokens of the gateway's own values. esbuild (tsx) emits no decorator metadata,
 * so every constructor parameter names its token with `@Inject(...)`.
 */
export const CONFIG = Symbol('Config');
export const LOG = Symbol('Log');
/** The kafkajs client the publisher and the live-event consumer share. */
export const KAFKA = Symbol('Kafka');
/** The gateway's `GatewayOptions` (settings of its own that are not in the shared `Config`). */
export const OPTIONS = Symbol('GatewayOptions');

/** Settings of the gateway beyond the environment's `Config`; every one has a default. */
export type GatewayOptions = {
  /**
   * How long chat, steer, retract and promote wait for the worker's decision on what they
   * produced (`input.accepted`/`input.rejected`, `steer.accepted`, `input.retracted`/
   * `retract.refused`, `promote.refused`) before they answer 503. Default 30 s.
   */
  decisionTimeoutMs?: number;
  /** Where the gateway logs; default stderr (`createLog('gateway')`). Tests pass one that keeps its lines. */
  log?: Log;
  /**
   * The clock (ms since the epoch) of what runs out on one: the refill of the input rate limit
   * and the expiry of stream tokens. Default `Date.now`; tests pass a clock they move, so
   * "after a second" is a step of the test, not a wait.
   */
  now?: () => number;
  /** How long a read waits for a `Rudder-Min-Position` ahead of what the gateway has seen (`ProducedPositions`). Default 2 s. */
  aheadWaitMs?: number;
};

export const DEFAULT_DECISION_TIMEOUT_MS = 30_000;
