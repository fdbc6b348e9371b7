import { randomUUID } from 'node:crypto';
import {
  Inject,
  Injectable,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { ConversationEventRecord, TokenRecord, type Announcement, type ConversationEvent } from '@rudder/contracts';
import { topicNames, type Config, type Log } from '@rudder/runtime';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { Positions } from '../consistency/positions';
import { GatewayError } from '../errors/gateway-error';
import { CONFIG, KAFKA, LOG } from '../tokens';
import { AnnouncedEvents } from './announced-events';
import { KeptTokens, type KeptToken } from './kept-tokens';
import { LiveConsumer, type LiveTopics } from './live-consumer';
import { Listeners, type LiveListener } from './listeners';
import { RECENT_MS, RecentEvents } from './recent-events';

/** At most this much of announcements (characters) waits for its records (`AnnouncedEvents`). */
const ANNOUNCED_BYTES = 4 * 1024 * 1024;
/** How often what is kept for a time is swept (`sweep`). */
const SWEEP_EVERY_MS = 10_000;

/**
 * What the gateway's live consumer (`LiveConsumer`) reads of `agent.events` and `agent.tokens`,
 * fanned out to the open streams of its conversation, and to the writes waiting for a decision.
 * What is announced (`noticed`) reaches the streams and the writes first.
 *
 * Boot waits until the consumer has joined and completed a first fetch, i.e. has resolved
 * its start offsets: a stream opened after `startGateway` resolves sees every event
 * published after it opened.
 *
 * It also keeps each conversation's events of the last minute (`RecentEvents`): for the
 * replays of streams (`recentAfter`) and the decisions writes wait for (`watch`).
 *
 * And it keeps the tokens of running turns, and of turns that ended in the last minute
 * (`KeptTokens`), for streams that reconnect with a token's id (`tokensAfter`).
 */
@Injectable()
export class LiveEvents implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly listeners: Listeners;
  /** The writes waiting for a decision (`watch`), by conversation: handed every record, and the decisions announced ahead of it (`noticed`). */
  private readonly watchers: Listeners;
  private readonly recent: RecentEvents;
  private readonly tokens: KeptTokens;
  /** Announced events waiting for their records, which then are not parsed again (10 to 20 s, `ANNOUNCED_BYTES` at most). */
  private readonly announced = new AnnouncedEvents(ANNOUNCED_BYTES);
  /**
   * The highest position announced of each conversation whose record has not come yet, and
   * when: what the streams may have carried ahead of `recent` (`seenPosition`). Let go when the
   * record reaching it comes, which every announced event's does (at the latest, swept as
   * `recent` is).
   */
  private readonly announcedAhead = new Map<string, { position: number; at: number }>();
  /** What the streams are fed, held until the writes it answered have gone out (`feedAfterAnswers`), by conversation, in order. */
  private readonly feedsAfterAnswers = new Map<string, (() => void)[]>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly topics: LiveTopics;
  private readonly consumer: LiveConsumer;

  constructor(
    @Inject(KAFKA) kafka: Kafka,
    @Inject(CONFIG) config: Config,
    @Inject(LOG) private readonly log: Log,
    /** Told every position consumed: reads waiting for a position wake on the record that reaches it (consistency/). */
    @Optional() @Inject(Positions) private readonly positions?: Positions,
  ) {
    const names = topicNames(config.KAFKA_NAMESPACE);
    this.topics = { events: names.events, tokens: names.tokens };
    this.consumer = new LiveConsumer(kafka, this.topics, `${config.KAFKA_NAMESPACE}gateway-${randomUUID()}`, log);
    this.listeners = new Listeners(log);
    this.watchers = new Listeners(log);
    this.recent = new RecentEvents(config.RECENT_EVENTS_BYTES);
    this.tokens = new KeptTokens(config.KEPT_TOKENS_BYTES);
  }

  /** Adds a stream of a conversation; the returned function removes it. */
  subscribe(conversation: string, listener: LiveListener): () => void {
    return this.listeners.add(conversation, listener);
  }

  /**
   * The first event of the conversation that `pick` turns into a value: among those seen in
   * the last minute that name one of `ids` (`idsNamedBy`: every value `pick` may return is of
   * such an event), else the next one to arrive. Listening starts at the call, so whatever is
   * produced after it (an input whose answer this awaits, say) cannot slip past. `result`
   * rejects with 503 `unavailable` when the gateway stops first; `cancel` stops listening and
   * must always be called (a `finally`), or the listener stays until shutdown. `seen` is the
   * value when it was already among the recent events at the call (then `result` has it too).
   */
  watch<T>(
    conversation: string,
    ids: readonly string[],
    pick: (event: ConversationEvent) => T | undefined,
  ): { result: Promise<T>; seen: T | undefined; cancel(): void } {
    let unsubscribe = (): void => undefined;
    const seen = this.recent.naming(conversation, ids).map(pick).find((value) => value !== undefined);
    const result = new Promise<T>((resolve, reject) => {
      if (seen !== undefined) return resolve(seen);
      unsubscribe = this.watchers.add(conversation, {
        event: (event) => {
          const value = pick(event);
          if (value === undefined) return;
          unsubscribe();
          resolve(value);
        },
        token: () => undefined,
        end: () => reject(new GatewayError('unavailable', 'the gateway is stopping; send the request again')),
      });
    });
    result.catch(() => undefined);
    return { result, seen, cancel: () => unsubscribe() };
  }

  /** Whether a stream or a write of this gateway waits on the conversation. */
  follows(conversation: string): boolean {
    return this.listeners.has(conversation) || this.watchers.has(conversation);
  }

  /**
   * What a commit stored, announced as it committed (`Announcements`), ahead of its records on
   * `agent.events`: handed to the writes waiting for a decision, and to the streams, which carry
   * it only when it follows what they carried (`EventStream.announced`); its positions are noted
   * as produced. Everything announced also comes on `agent.events`, which is what streams fall
   * back to, in the log's order. `size`: the announcement's length, in characters.
   */
  noticed({ conversation, after, events }: Announcement, size: number): void {
    const waiting = this.watchers.count(conversation);
    const highest = Math.max(0, ...events.map((event) => event.position));
    if (highest > (this.seenPosition(conversation) ?? 0)) this.announcedAhead.set(conversation, { position: highest, at: Date.now() });
    for (const event of events) {
      this.announced.keep(event, size / events.length);
      this.positions?.produced.saw(event.position);
      this.watchers.handOut(conversation, (watcher) => watcher.event(event));
    }
    this.feedAfterAnswers(conversation, waiting, () => this.listeners.handOut(conversation, (listener) => listener.announced?.(events, after)));
  }

  /**
   * Feeds the conversation's streams (`feed`) once the writes just answered have gone out:
   * `waiting` is how many writes waited on the conversation before its watchers were handed
   * the events. A write they answered (its watcher let go) goes out first: its answer runs in
   * this turn's microtasks, and the streams are fed after them. Fed first, a stream's write
   * wakes its reader, which on a busy machine takes the core the answer waits for (a
   * millisecond of a steer's decision). What comes for the conversation meanwhile, announced or
   * as records, waits behind it, in order (a stream carries an announcement only when it
   * follows what it carried).
   */
  private feedAfterAnswers(conversation: string, waiting: number, feed: () => void): void {
    const later = this.feedsAfterAnswers.get(conversation);
    if (later) later.push(feed);
    else if (this.watchers.count(conversation) < waiting) {
      const feeds = [feed];
      this.feedsAfterAnswers.set(conversation, feeds);
      setImmediate(() => {
        this.feedsAfterAnswers.delete(conversation);
        for (const next of feeds) next();
      });
    } else feed();
  }

  /** Events of the conversation above `position` seen live in the last minute, oldest first. */
  recentAfter(conversation: string, position: number): ConversationEvent[] {
    return this.recent.after(conversation, position);
  }

  /** The kept tokens of the conversation a stream at `cursor` has not had (see `KeptTokens.after`), oldest first. */
  tokensAfter(conversation: string, cursor: { position: number; tokenOffset: number | null }): KeptToken[] {
    return this.tokens.after(conversation, cursor);
  }

  /** The highest position of the conversation seen live lately on `agent.events`; null when none was. */
  latestPosition(conversation: string): number | null {
    return this.recent.latest(conversation);
  }

  /**
   * The highest position of the conversation seen lately, announced (`noticed`) or as a record;
   * null when none was. A stream may have carried an announced event before its record comes
   * (`latestPosition`): a read that must show what this gateway's streams showed reads this far.
   */
  seenPosition(conversation: string): number | null {
    return this.announcedAhead.get(conversation)?.position ?? this.latestPosition(conversation);
  }

  async onModuleInit(): Promise<void> {
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_EVERY_MS);
    this.sweeper.unref();
    await this.consumer.start((topic, message) => this.dispatch(topic, message));
  }

  /** Forgets what is kept past its time: recent events, tokens, announced events and positions whose records did not come. */
  private sweep(now: number): void {
    this.recent.forgetSeenBefore(now - RECENT_MS);
    for (const [conversation, { at }] of this.announcedAhead) if (at < now - RECENT_MS) this.announcedAhead.delete(conversation);
    this.tokens.sweep(now);
    this.announced.sweep();
  }

  /** Streams end before the HTTP server closes, or it would wait on them forever. */
  beforeApplicationShutdown(): void {
    this.listeners.endAll();
    this.watchers.endAll();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.sweeper);
    await this.consumer.stop();
  }

  private dispatch(topic: string, message: KafkaMessage): void {
    if (topic === this.topics.events) {
      const event = this.announcedRecord(message) ?? ConversationEventRecord.safeParse(parseJson(message.value));
      if (!event.success) return this.skip(topic, message, event.error.message);
      const { conversation } = event.data;
      this.positions?.produced.saw(event.data.position);
      this.recent.remember(event.data, message.value?.length ?? 0);
      if ((this.announcedAhead.get(conversation)?.position ?? 0) <= event.data.position) this.announcedAhead.delete(conversation);
      if (event.data.type === 'turn.ended') this.tokens.turnEnded(conversation, event.data.data.turn, Date.now());
      const waiting = this.watchers.count(conversation);
      this.watchers.handOut(conversation, (watcher) => watcher.event(event.data));
      this.feedAfterAnswers(conversation, waiting, () => this.listeners.handOut(conversation, (listener) => listener.event(event.data)));
    } else {
      const token = TokenRecord.safeParse(parseJson(message.value));
      if (!token.success) return this.skip(topic, message, token.error.message);
      const conversation = token.data.conversation;
      const kept = this.tokens.keep(token.data, Number(message.offset), this.latestPosition(conversation), Date.now(), message.value?.length ?? 0);
      if (kept) this.listeners.handOut(conversation, (listener) => listener.token(kept));
    }
  }

  /** The record's event as its announcement brought it (by the relay's `event-id` header), taken out of `announced`. */
  private announcedRecord(message: KafkaMessage): { success: true; data: ConversationEvent } | undefined {
    const header = message.headers?.['event-id'];
    const event = header === undefined ? undefined : this.announced.take(header.toString());
    return event === undefined ? undefined : { success: true, data: event };
  }

  /** The gateway only relays; a record it cannot read is the producer's bug, logged and skipped. */
  private skip(topic: string, message: KafkaMessage, reason: string): void {
    this.log.warn('skipped a record that does not parse', { topic, offset: message.offset, reason });
  }
}

function parseJson(value: Buffer | null): unknown {
  if (value === null) return undefined;
  try {
    return JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
}
