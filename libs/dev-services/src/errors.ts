/**
 * Stable codes for everything that can go wrong while bringing up the infrastructure.
 * Messages say what to do; `code` is what callers branch on.
 */
export type DevServicesErrorCode =
  /** `mvn` failed or is missing, so the Kafka broker jars are not in the cache. */
  | 'KAFKA_JARS_UNAVAILABLE'
  /** Another process holds the jar-cache lock for too long. */
  | 'KAFKA_JARS_LOCKED'
  /** `kafka.tools.StorageTool format` failed. */
  | 'KAFKA_FORMAT_FAILED'
  /** The broker process exited before it answered. */
  | 'KAFKA_EXITED'
  /** The broker did not answer `describeCluster` in time. */
  | 'KAFKA_NOT_READY'
  /** A method was called on a broker that was stopped for good. */
  | 'KAFKA_STOPPED'
  | 'KAFKA_BROKERS_COUNT'
  /** initdb or postgres failed, or there are no PostgreSQL binaries for this platform. */
  | 'POSTGRES_START_FAILED'
  /** As root, with no `postgres` user to run PostgreSQL as, and none could be created. */
  | 'POSTGRES_USER_MISSING'
  /** As root, the `postgres` user cannot run PostgreSQL from the temp dir (TMPDIR): no access, or noexec. */
  | 'POSTGRES_UNREACHABLE'
  /** A method was called on a PostgreSQL server that was stopped for good. */
  | 'POSTGRES_STOPPED'
  /** Several PostgreSQL primaries asked for, and DATABASE_URL names one: DATABASE_URLS names them. */
  | 'POSTGRES_COUNT'
  /** A container did not start although a Docker engine answered. */
  | 'DOCKER_START_FAILED';

export class DevServicesError extends Error {
  override readonly name = 'DevServicesError';
  constructor(
    readonly code: DevServicesErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
