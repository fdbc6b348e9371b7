/**
 * Injection tokens of the gateway's own values. esbuild (tsx) emits no decorator metadata,
 * so every constructor parameter names its token with `@Inject(...)`.
 */
export const CONFIG = Symbol('Config');
export const LOG = Symbol('Log');
/** The kafkajs client the publisher and the live-event consumer share. */
export const KAFKA = Symbol('Kafka');
