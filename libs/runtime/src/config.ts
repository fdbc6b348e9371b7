import { z } from 'zod';

/**
 * The environment every service reads. Defaults suit `npm start` on one machine; the
 * start script fills KAFKA_BROKERS and DATABASE_URL when it starts the infrastructure itself.
 */
const Env = z.object({
  KAFKA_BROKERS: z.string().min(1, 'KAFKA_BROKERS is required (host:port[,host:port])'),
  DATABASE_URL: z.string().min(1, 'DATABASE_URL is required (postgres://...)'),
  /**
   * Prefixes every topic and consumer group name. Empty in production (the contract's names);
   * the test suite gives each stack its own so stacks never read each other's records.
   */
  KAFKA_NAMESPACE: z.string().default(''),
  KAFKA_PARTITIONS: z.coerce.number().int().positive().default(6),
  GATEWAY_PORT: z.coerce.number().int().nonnegative().default(3000),
  COMPANION_PORT: z.coerce.number().int().nonnegative().default(3001),
  COMPANION_URL: z.string().optional(),
  OPENAI_BASE_URL: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_MODEL: z.string().default('gpt-4o-mini'),
  AUTH_TOKENS: z.string().optional(),
  MAX_TEXT_CHARS: z.coerce.number().int().positive().default(8000),
  /** How many steered messages a turn takes at most; 0: the agent's turns take none (every steer becomes a turn of its own). */
  STEERS_PER_TURN: z.coerce.number().int().nonnegative().default(16),
  /** Bounds of what waits in a conversation: steers for the running turn, inputs queued behind it, and their characters together. */
  MAX_PENDING_STEERS: z.coerce.number().int().positive().default(4),
  MAX_PENDING_CHATS: z.coerce.number().int().positive().default(4),
  MAX_PENDING_CHARS: z.coerce.number().int().positive().default(8000),
  /**
   * Consumer session timeout of the turn workers: a dead worker's conversations move after it
   * (measured: kill → next committed step ≈ this + the interrupted call's rerun; see
   * bench/results.md). Shorter means faster failover and more false alarms; 6 s is the
   * broker's default minimum.
   */
  WORKER_SESSION_TIMEOUT_MS: z.coerce.number().int().positive().default(6000),
  WORKER_HEARTBEAT_MS: z.coerce.number().int().positive().default(1000),
  /** Names a point at which the worker kills itself, for crash tests (see apps/turn-worker/src/fault-points.ts). */
  CRASH_AT: z.string().optional(),
  /** Names a point at which the worker pauses itself with SIGSTOP, for fencing tests (same file). */
  PAUSE_AT: z.string().optional(),
});
export type Config = z.infer<typeof Env>;

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`bad configuration: ${problems}`);
  }
  return parsed.data;
}

export const companionUrl = (config: Config): string =>
  config.COMPANION_URL ?? `http://127.0.0.1:${config.COMPANION_PORT}`;
