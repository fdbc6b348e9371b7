import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { createPool, databaseUrls, type Config, type Log, type Pool } from '@rudder/runtime';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { CONFIG, LOG } from '../tokens';

const CHECK_TIMEOUT_MS = 2000;

export type Dependency = 'kafka' | 'database';
export type HealthReport = Record<Dependency, 'ok' | 'unavailable'>;

/**
 * Whether the gateway's dependencies answer now: Kafka (admin `describeCluster`) and
 * PostgreSQL (`select 1` on every primary: one that does not answer makes it unavailable), each within 2 s. The clients are the checks' own, small and
 * without retries, so a check reports the present state instead of retrying it away (and a
 * Kafka outage is not logged by kafkajs on every probe).
 */
@Injectable()
export class HealthChecks implements OnApplicationShutdown {
  private readonly kafka: Kafka;
  /** One small pool per PostgreSQL primary. */
  private readonly pools: Pool[];
  private admin: Admin | null = null;

  constructor(@Inject(CONFIG) config: Config, @Inject(LOG) private readonly log: Log) {
    this.kafka = new Kafka({
      clientId: 'gateway-health',
      brokers: config.KAFKA_BROKERS.split(',').map((broker) => broker.trim()),
      connectionTimeout: 1000,
      requestTimeout: CHECK_TIMEOUT_MS,
      retry: { retries: 0 },
      logLevel: logLevel.NOTHING,
    });
    // Named: growing the primaries (scripts/grow-primaries.ts) lets the gateways' sessions stay.
    this.pools = databaseUrls(config).map((url) => createPool(url, 2, 'rudder-gateway-health'));
  }

  async check(): Promise<HealthReport> {
    const [kafka, database] = await Promise.all([
      this.probe('kafka', () => this.describeCluster()),
      this.probe('database', () => Promise.all(this.pools.map((pool) => pool.query('select 1')))),
    ]);
    return { kafka, database };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.admin?.disconnect().catch(() => undefined);
    await Promise.all(this.pools.map((pool) => pool.end().catch(() => undefined)));
  }

  private async describeCluster(): Promise<void> {
    const admin = (this.admin ??= this.kafka.admin());
    try {
      await admin.connect();
      await admin.describeCluster();
    } catch (error) {
      // A fresh client next time: no half-broken connection outlives a failed probe.
      this.admin = null;
      await admin.disconnect().catch(() => undefined);
      throw error;
    }
  }

  private async probe(dependency: Dependency, check: () => Promise<unknown>): Promise<'ok' | 'unavailable'> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
    });
    try {
      await Promise.race([check(), timeout]);
      return 'ok';
    } catch (error) {
      this.log.warn(`health: ${dependency} unavailable`, { error: String(error) });
      return 'unavailable';
    } finally {
      clearTimeout(timer);
    }
  }
}
