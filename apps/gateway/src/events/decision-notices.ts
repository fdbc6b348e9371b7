import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { ConversationEventRecord } from '@rudder/contracts';
import { decisionChannel, type Config, type Log } from '@rudder/runtime';
import { CONFIG, LOG } from '../tokens';
import { LiveEvents } from './live-events';

/** The wait before listening again after the connection was lost, doubled up to RETRY_MAX_MS. */
const RETRY_MS = 500;
const RETRY_MAX_MS = 10_000;
/** How long connecting may take before it counts as failed. */
const CONNECT_TIMEOUT_MS = 5000;
/** A notification's payload: the event records a commit stored. */
const Announced = ConversationEventRecord.array();

/**
 * The decisions the workers announce as they commit them (`LISTEN` on the decision channel;
 * `announceDecisions` in the worker): each is handed to the writes waiting for it
 * (`LiveEvents.noticed`), one hop after the commit that decided it, instead of after the outbox
 * relay's produce and the live consumer's fetch (issue 36 item 1). Only a shortcut: every
 * decision also comes on `agent.events`, so a notification missed — while the connection is
 * down, or one the worker could not send — only makes that answer as slow as before. A
 * connection lost is listened on again, with backoff; the gateway starts and serves without it.
 */
@Injectable()
export class DecisionNotices implements OnModuleInit, OnApplicationShutdown {
  private client: pg.Client | null = null;
  private stopped = false;
  private readonly channel: string;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(LOG) private readonly log: Log,
  ) {
    this.channel = decisionChannel(config.KAFKA_NAMESPACE);
  }

  /** Listening before the gateway serves, when the database answers; else the gateway starts without it, and listens once it can. */
  async onModuleInit(): Promise<void> {
    try {
      await this.listen();
    } catch (error) {
      void this.retry(error, 1);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.client?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.config.DATABASE_URL, application_name: 'rudder-gateway-decisions', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    client.on('notification', (message) => this.take(message.payload));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    if (this.stopped) return void client.end().catch(() => undefined);
    this.client = client;
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.stopped || this.client !== client) return;
    this.client = null;
    client.end().catch(() => undefined);
    void this.retry(error, 1);
  }

  private async retry(error: unknown, attempt: number): Promise<void> {
    if (this.stopped) return;
    this.log.warn('listening for announced decisions failed; writes are answered from agent.events meanwhile', { error: String(error), attempt });
    await sleep(Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** (attempt - 1)));
    if (this.stopped) return;
    await this.listen().catch((next: unknown) => this.retry(next, attempt + 1));
  }

  /** One notification: a JSON array of event records; anything else is a bug of its sender, logged and dropped. */
  private take(payload: string | undefined): void {
    let records: unknown;
    try {
      records = JSON.parse(payload ?? '');
    } catch {
      records = undefined;
    }
    const parsed = Announced.safeParse(records);
    if (!parsed.success) {
      this.log.warn('dropped an announced decision that does not parse', { channel: this.channel });
      return;
    }
    this.live.noticed(parsed.data);
  }
}
