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
   * How long `POST .../steer` waits for the worker's decision (`steer.accepted`) before it
   * answers 503 (the steer was sent; the same id again gets its answer). Default 30 s.
   */
  steerDecisionTimeoutMs?: number;
};

export const DEFAULT_STEER_DECISION_TIMEOUT_MS = 30_000;
