import { z } from 'zod';
import { shardMapProblem, splitUrls } from './shards';

/**
 * The environment every service reads. Defaults suit `npm start` on one machine; the
 * start script fills KAFKA_BROKERS and DATABASE_URL when it starts the infrastructure itself.
 */
const Env = z.object({
  KAFKA_BROKERS: z.string().min(1, 'KAFKA_BROKERS is required (host:port[,host:port])'),
  DATABASE_URL: z.string().min(1, 'DATABASE_URL is required (postgres://...)'),
  /**
   * Several PostgreSQL primaries, comma-separated (docs/operations.md, "Several PostgreSQL
   * primaries"): shard i owns the partitions p of agent.inputs with floor(p × N / KAFKA_PARTITIONS)
   * = i (`shardMap`). Unset: DATABASE_URL alone; set without DATABASE_URL, that is its first.
   */
  DATABASE_URLS: z.string().optional(),
  /**
   * Prefixes every topic and consumer group name. Empty in production (the contract's names);
   * the test suite gives each stack its own so stacks never read each other's records.
   */
  KAFKA_NAMESPACE: z.string().default(''),
  KAFKA_PARTITIONS: z.coerce.number().int().positive().default(6),
  GATEWAY_PORT: z.coerce.number().int().nonnegative().default(3000),
  COMPANION_PORT: z.coerce.number().int().nonnegative().default(3001),
  COMPANION_URL: z.string().optional(),
  /**
   * Where the companion's internal API listens: 127.0.0.1 unless set. Bound anywhere else it
   * needs COMPANION_TOKEN (it refuses to start without one): a shared service token, at least
   * 16 characters, that every gateway sends (`authorization: Bearer <token>`) and the
   * companion checks on every route but /healthz and /metrics. Set the same on both sides.
   */
  COMPANION_HOST: z.string().min(1).default('127.0.0.1'),
  COMPANION_TOKEN: z.string().optional(),
  OPENAI_BASE_URL: z.string().optional(),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_MODEL: z.string().default('gpt-4o-mini'),
  AUTH_TOKENS: z.string().optional(),
  /**
   * JWTs beside AUTH_TOKENS: HS256 with this shared secret (at least 32 characters), and/or
   * RS256/ES256 with the keys of the JWKS at AUTH_JWKS_URL. Either one needs AUTH_JWT_ISSUER
   * and AUTH_JWT_AUDIENCE (checked on every token); the subject is the claim
   * AUTH_JWT_SUBJECT_CLAIM names. See apps/gateway/src/auth/jwt-verifier.ts.
   */
  AUTH_JWT_SECRET: z.string().optional(),
  AUTH_JWKS_URL: z.url({ message: 'AUTH_JWKS_URL must be an http(s) URL' }).optional(),
  AUTH_JWT_ISSUER: z.string().optional(),
  AUTH_JWT_AUDIENCE: z.string().optional(),
  AUTH_JWT_SUBJECT_CLAIM: z.string().min(1).default('sub'),
  /**
   * Signs the short-lived stream tokens (`POST …/stream-tokens`). Unset: a random secret per
   * gateway process, so a stream token opens streams on the gateway that issued it only; set
   * it (the same on every gateway, at least 32 characters) when several gateways share traffic.
   */
  AUTH_STREAM_TOKEN_SECRET: z.string().optional(),
  AUTH_STREAM_TOKEN_TTL_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
  /**
   * Limits per subject, per gateway process: inputs (chat, steer, stop, retract, promote) per
   * second with a burst of LIMIT_INPUTS_BURST (default twice the rate), and event streams
   * open at once. Past either: 429 with Retry-After. 0 turns a limit off. Unset: 50 inputs a
   * second and 32 streams where requests are authenticated, no limit in open development mode,
   * where every request is one subject (`limitSettings` in the gateway).
   */
  LIMIT_INPUTS_PER_SECOND: z.coerce.number().nonnegative().optional(),
  LIMIT_INPUTS_BURST: z.coerce.number().int().positive().optional(),
  LIMIT_STREAMS_PER_SUBJECT: z.coerce.number().int().nonnegative().optional(),
  /**
   * Reads of a conversation (status, transcript, turns, event streams opened) per second per
   * subject, per gateway, with bursts of LIMIT_READS_BURST (default twice the rate); past it 429.
   * 0 turns it off. Unset: 100 a second where requests are authenticated, none in open development mode.
   */
  LIMIT_READS_PER_SECOND: z.coerce.number().nonnegative().optional(),
  LIMIT_READS_BURST: z.coerce.number().int().positive().optional(),
  /**
   * What a gateway holds in memory for its event streams (docs/security.md, "Memory caps"):
   * the bytes an event stream's response may hold unsent (a client that reads slower than its
   * conversation produces) before the gateway drops that stream (the client resumes with
   * Last-Event-ID); and, gateway-wide, the bytes of the recent events and of the kept tokens
   * (as received from Kafka), the oldest let go first past them.
   */
  STREAM_BUFFER_BYTES: z.coerce.number().int().positive().default(1024 * 1024),
  RECENT_EVENTS_BYTES: z.coerce.number().int().positive().default(32 * 1024 * 1024),
  KEPT_TOKENS_BYTES: z.coerce.number().int().positive().default(32 * 1024 * 1024),
  MAX_TEXT_CHARS: z.coerce.number().int().positive().default(8000),
  /** How many steered messages a turn takes at most; 0: the agent's turns take none (every steer becomes a turn of its own). */
  STEERS_PER_TURN: z.coerce.number().int().nonnegative().default(16),
  /**
   * How many earlier turns a model request carries, the latest ones, each whole (its prompt, the
   * messages steered to it, its answers); 0: none. A conversation's log keeps every turn; what a
   * request carries stays bounded however long it grows (its size, and a model's context window).
   */
  HISTORY_TURNS: z.coerce.number().int().nonnegative().default(100),
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
  /** A conversation with nothing running or waiting is forgotten (its fold let go) after this long; read from the log again on its next input. */
  WORKER_IDLE_FORGET_MS: z.coerce.number().int().positive().default(60_000),
  /**
   * Between turns, a worker stores a snapshot of a conversation's fold once its log has grown by
   * this many events since the last one, so reading it again (after a restart, a rebalance or an
   * idle spell) reads the snapshot and at most this many events, not the whole log.
   */
  WORKER_SNAPSHOT_EVERY_EVENTS: z.coerce.number().int().positive().default(250),
  /** Names a point at which the worker kills itself, for crash tests (see apps/turn-worker/src/fault-points.ts). */
  CRASH_AT: z.string().optional(),
  /** Names a point at which the worker pauses itself with SIGSTOP, for fencing tests (same file). */
  PAUSE_AT: z.string().optional(),
  /** The turn worker serves `GET /metrics` on this port (0: one the system chooses); unset: no metrics server. */
  METRICS_PORT: z.coerce.number().int().nonnegative().optional(),
});
export type Config = z.infer<typeof Env>;

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const urls = env.DATABASE_URLS ? splitUrls(env.DATABASE_URLS) : [];
  const parsed = Env.superRefine((config, context) => {
    const problem = config.DATABASE_URLS === undefined ? null : shardMapProblem(urls, config.KAFKA_PARTITIONS);
    if (problem) context.addIssue({ code: 'custom', path: ['DATABASE_URLS'], message: problem });
  }).safeParse(env.DATABASE_URL || urls.length === 0 ? env : { ...env, DATABASE_URL: urls[0] });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`bad configuration: ${problems}`);
  }
  return parsed.data;
}

export const companionUrl = (config: Config): string =>
  config.COMPANION_URL ?? `http://127.0.0.1:${config.COMPANION_PORT}`;
