import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Optional, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { Announcement } from '@rudder/contracts';
import { announcementChannel, databaseUrls, hop, type Config, type Log } from '@rudder/runtime';
import { Positions } from '../consistency/positions';
import { CONFIG, LOG } from '../tokens';
import { LiveEvents } from './live-events';

/** The wait before listening again after the connection was lost, doubled up to RETRY_MAX_MS. */
const RETRY_MS = 500;
const RETRY_MAX_MS = 10_000;
/** How long connecting may take before it counts as failed. */
const CONNECT_TIMEOUT_MS = 5000;

/**
 * What the workers' commits store, announced as they commit (`LISTEN` on the announcement
 * channel; `announcedCte` in the event store): each `Announcement` is handed to the writes
 * waiting for a decision and to the conversation's streams (`LiveEvents.noticed`), one hop after
 * the commit, instead of after the outbox relay's produce and the live consumer's fetch. Only a
 * shortcut: every event also comes on `agent.events`, so a notification missed —
 * while the connection is down, or one too large to send — only makes that answer or that
 * stream as slow as before. A connection lost is listened on again, with backoff; the gateway
 * starts and serves without it. With several PostgreSQL primaries (DATABASE_URLS) it listens on
 * each (a commit is announced on its own primary), each connection lost and listened on again on its own.
 */
@Injectable()
export class Announcements implements OnModuleInit, OnApplicationShutdown {
  /** The connection listening on each primary, by URL, while it is up. */
  private readonly clients = new Map<string, pg.Client>();
  private stopped = false;
  private readonly channel: string;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LiveEvents) private readonly live: LiveEvents,
    @Inject(LOG) private readonly log: Log,
    @Optional() @Inject(Positions) private readonly positions?: Positions,
  ) {
    this.channel = announcementChannel(config.KAFKA_NAMESPACE);
  }

  /** Listening before the gateway serves, when the database answers; else the gateway starts without it, and listens once it can. */
  async onModuleInit(): Promise<void> {
    await Promise.all(databaseUrls(this.config).map((url) => this.listen(url).catch((error: unknown) => void this.retry(url, error, 1))));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.clients.values()].map((client) => client.end().catch(() => undefined)));
  }

  private async listen(url: string): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: url, application_name: 'rudder-gateway-announcements', connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    client.on('notification', (message) => {
      hop('gateway.announcement');
      this.take(message.payload);
    });
    client.on('error', (error) => this.lost(url, client, error));
    client.on('end', () => this.lost(url, client, new Error('the connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN "${this.channel}"`);
    } catch (error) {
      client.end().catch(() => undefined);
      throw error;
    }
    if (this.stopped) return void client.end().catch(() => undefined);
    this.clients.set(url, client);
  }

  private lost(url: string, client: pg.Client, error: unknown): void {
    if (this.stopped || this.clients.get(url) !== client) return;
    this.clients.delete(url);
    client.end().catch(() => undefined);
    void this.retry(url, error, 1);
  }

  private async retry(url: string, error: unknown, attempt: number): Promise<void> {
    if (this.stopped) return;
    this.log.warn('listening for announcements failed; writes are answered and streams fed from agent.events meanwhile', { error: String(error), attempt, primary: hostOf(url) });
    await sleep(Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** (attempt - 1)));
    if (this.stopped) return;
    await this.listen(url).catch((next: unknown) => this.retry(url, next, attempt + 1));
  }

  /**
   * One notification: an `Announcement` (a conversation's records a commit stored, and the
   * position before them); anything else is a bug of its sender, logged and dropped. Read whole
   * only when this gateway has a stream or a write waiting on the conversation; its `last`
   * position is noted as produced in every case, so a read another gateway's write sent here
   * with `Rudder-Min-Position` goes on at the commit, not at the records' batched fetch.
   */
  private take(payload: string | undefined): void {
    // Every gateway hears every commit: one that follows none of a conversation reads no more of it than its head.
    const { conversation: named, last } = announcedHead(payload ?? '');
    if (last !== undefined) this.positions?.produced.saw(last);
    if (named !== undefined && !this.live.follows(named)) return;
    let value: unknown;
    try {
      value = JSON.parse(payload ?? '');
    } catch {
      value = undefined;
    }
    const conversation = (value as { conversation?: unknown } | undefined)?.conversation;
    if (typeof conversation === 'string' && !this.live.follows(conversation)) return;
    const parsed = Announcement.safeParse(value);
    if (!parsed.success) {
      this.log.warn('dropped an announcement that does not parse', { channel: this.channel });
      return;
    }
    this.live.noticed(parsed.data, payload?.length ?? 0);
  }
}

/** A primary as a log line names it: its host, port and database, never its credentials. */
function hostOf(url: string): string {
  try {
    const { host, pathname } = new URL(url);
    return `${host}${pathname}`;
  } catch {
    return '(a URL that does not parse)';
  }
}

/**
 * The conversation an announcement names and the position of its last event, read from its start
 * without parsing the rest: the event store's `announcedCte` builds it with `json_build_object`,
 * whose first keys are `conversation` and `last`. `conversation` is undefined when the payload
 * does not start so (it is then parsed whole); `last` when it does not follow (an older writer's).
 */
export function announcedHead(payload: string): { conversation?: string; last?: number } {
  const head = /^\{\s*"conversation"\s*:\s*("(?:[^"\\]|\\.)*")(?:\s*,\s*"last"\s*:\s*(\d{1,15})\s*[,}])?/.exec(payload);
  if (head === null) return {};
  let conversation: unknown;
  try {
    conversation = JSON.parse(head[1]);
  } catch {
    return {};
  }
  if (typeof conversation !== 'string') return {};
  return head[2] === undefined ? { conversation } : { conversation, last: Number(head[2]) };
}
