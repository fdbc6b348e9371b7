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
import { keepConsuming, periodicCommits, READER_SESSION, topicNames, type Config, type KeptConsumer, type Log, type PeriodicCommits } from '@rudder/runtime';
import type { Kafka, KafkaMessage, TopicPartitionOffset } from 'kafkajs';
import { Positions } from '../consistency/positions';
import { GatewayError } from '../errors/gateway-error';
import { CONFIG, KAFKA, LOG } from '../tokens';
import type { LiveListener } from './event-stream';
import { AnnouncedEvents } from './announced-events';
import { KeptTokens, type KeptToken } from './kept-tokens';
import { RECENT_MS, RecentEvents } from './recent-events';

/** Bounds how long boot waits for the consumer to be positioned at the end of its topics. */
const READY_TIMEOUT_MS = 30_000;
/** How often the consumer's offsets are committed (see `onModuleInit`). */
const COMMIT_EVERY_MS = 1000;
/** At most this much of announcements (characters) waits for its records (`AnnouncedEvents`). */
const ANNOUNCED_BYTES = 4 * 1024 * 1024;
/** How often what is kept for a time is swept (`sweep`). */
const SWEEP_EVERY_MS = 10_000;
/**
 * The live consumer's fetches are answered in batches, at most this long after they were sent:
 * each asks for more bytes than come (`RECORDS_HELD_BYTES`), so the broker holds it until then. What
 * a stream or a write waits for comes first by announcement (`noticed`): records are its fallback
 * (an announcement missed or too large, announcing stopped) and the tokens, which 50 ms more hardly
 * delay (the worker gathers a step's tokens for 40 ms). Answered at each record instead, a
 * turn's every commit woke the broker and this gateway in the turn's own milliseconds: a one-tool
 * turn of a new conversation ended 3–4 ms later, a steer was answered 2–3 ms later (docs/performance.md, session 22).
 */
const RECORDS_BATCHED_MS = 50;
/** More than a fetch gets in `RECORDS_BATCHED_MS` short of a flood (kafkajs asks for at most 10 MB a fetch, 1 MB a partition). */
const RECORDS_HELD_BYTES = 1024 * 1024;

/**
 * The gateway's one consumer of `agent.events` and `agent.tokens`, fanning records out to
 * the open streams of their conversation.
 *
 * Every gateway process must see every record (a client's stream may be on any replica), so
 * each process has a consumer group of its own, `${ns}gateway-<uuid>`, that starts at the end
 * of the topics (what came before is the store's to replay). A restarted gateway is a new
 * group; within a process the group's offsets are committed from its first fetch on, so a
 * consumer kafkajs had to replace resumes where the last one was (see `onModuleInit`).
 *
 * Its fetches are answered in batches, every 50 ms at most (`RECORDS_BATCHED_MS`): what is
 * announced (`noticed`) reaches the streams and the writes first.
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
  private readonly listeners = new Map<string, Set<LiveListener>>();
  /** The writes waiting for a decision (`watch`), by conversation: handed every record, and the decisions announced ahead of it (`noticed`). */
  private readonly watchers = new Map<string, Set<LiveListener>>();
  private readonly recent: RecentEvents;
  private readonly tokens: KeptTokens;
  /** Announced events waiting for their records, which then are not parsed again (10 to 20 s, `ANNOUNCED_BYTES` at most). */
  private readonly announced = new AnnouncedEvents(ANNOUNCED_BYTES);
  /** What the streams are fed, held until the writes it answered have gone out (`feedAfterAnswers`), by conversation, in order. */
  private readonly feedsAfterAnswers = new Map<string, (() => void)[]>();
  private sweeper: NodeJS.Timeout | undefined;
  private consumer: KeptConsumer | undefined;
  private commits: PeriodicCommits | undefined;
  private readonly topics: { events: string; tokens: string };
  private readonly groupId: string;

  constructor(
    @Inject(KAFKA) private readonly kafka: Kafka,
    @Inject(CONFIG) config: Config,
    @Inject(LOG) private readonly log: Log,
    /** Told every position consumed: reads waiting for a position wake on the record that reaches it (consistency/). */
    @Optional() @Inject(Positions) private readonly positions?: Positions,
  ) {
    const names = topicNames(config.KAFKA_NAMESPACE);
    this.topics = { events: names.events, tokens: names.tokens };
    this.groupId = `${config.KAFKA_NAMESPACE}gateway-${randomUUID()}`;
    this.recent = new RecentEvents(config.RECENT_EVENTS_BYTES);
    this.tokens = new KeptTokens(config.KEPT_TOKENS_BYTES);
  }

  /** Adds a stream of a conversation; the returned function removes it. */
  subscribe(conversation: string, listener: LiveListener): () => void {
    return add(this.listeners, conversation, listener);
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
      unsubscribe = add(this.watchers, conversation, {
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
    const waiting = this.watchers.get(conversation)?.size ?? 0;
    for (const event of events) {
      this.announced.keep(event, size / events.length);
      this.positions?.produced.saw(event.position);
      handOut(this.watchers, conversation, (watcher) => watcher.event(event), this.log);
    }
    this.feedAfterAnswers(conversation, waiting, () => this.handOut(conversation, (listener) => listener.announced?.(events, after)));
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
    else if ((this.watchers.get(conversation)?.size ?? 0) < waiting) {
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

  /** The highest position of the conversation seen live lately; null when none was. */
  latestPosition(conversation: string): number | null {
    return this.recent.latest(conversation);
  }

  async onModuleInit(): Promise<void> {
    this.sweeper = setInterval(() => this.sweep(Date.now()), SWEEP_EVERY_MS);
    this.sweeper.unref();
    let positioned!: () => void;
    const firstFetch = new Promise<void>((resolve) => (positioned = resolve));
    // Offsets are committed (in this process's own group) so that a consumer kafkajs had to
    // replace resumes where the last one stopped instead of at the end, losing nothing between.
    // At most once a second (`periodicCommits`), not after every batch (a request per batch): a
    // replacement then reads up to a second again, which the streams drop by position and
    // decisions ignore.
    //
    // The group's first offsets are the topics' ends as they were before it joined, committed
    // once it runs. Without them a replacement that came before the first periodic commit (the
    // broker killed a moment after a partition's first records) would start at the end as of
    // *its* join, after whatever was published while it was away: streams open across it would
    // never get that. (kafkajs' admin.setOffsets runs a whole consumer of its own: 5 s a topic.)
    let startAt: TopicPartitionOffset[] | undefined = await this.topicEnds().catch((error: unknown) => {
      this.log.warn("reading the topics' ends failed; the live consumer starts where Kafka says", { error: String(error) });
      return undefined;
    });
    this.consumer = await keepConsuming({
      log: this.log,
      create: () =>
        this.kafka.consumer({
          groupId: this.groupId,
          allowAutoTopicCreation: false,
          ...READER_SESSION,
          // Also bounds how long boot waits for the first fetch, and a stop for the last.
          maxWaitTimeInMs: RECORDS_BATCHED_MS,
          minBytes: RECORDS_HELD_BYTES,
        }),
      run: async (consumer) => {
        const off = consumer.on(consumer.events.FETCH, () => {
          off();
          positioned();
        });
        // At its first fetch: before that (at the join, say) kafkajs drops a commit unsent.
        const fetching = consumer.on(consumer.events.FETCH_START, () => {
          fetching();
          const offsets = startAt;
          startAt = undefined;
          if (offsets) void consumer.commitOffsets(offsets).catch((error: unknown) => this.log.warn("committing the live consumer's first offsets failed", { error: String(error) }));
        });
        await consumer.connect();
        await consumer.subscribe({ topics: [this.topics.events, this.topics.tokens], fromBeginning: false });
        void this.commits?.flush(); // a consumer kafkajs gave up on: its timer stops
        const commits = (this.commits = periodicCommits(consumer, COMMIT_EVERY_MS, this.log));
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ topic, partition, message }) => {
            this.dispatch(topic, message);
            commits.handled(topic, partition, message.offset);
            await commits.due();
          },
        });
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), READY_TIMEOUT_MS)));
    const outcome = await Promise.race([firstFetch, timedOut]);
    clearTimeout(timer);
    if (outcome === 'timeout') this.log.warn('live events consumer not positioned after 30 s; streams may miss early events');
  }

  /** Forgets what is kept past its time: recent events, tokens, announced events whose records did not come. */
  private sweep(now: number): void {
    this.recent.forgetSeenBefore(now - RECENT_MS);
    this.tokens.sweep(now);
    this.announced.sweep();
  }

  /** Where each partition of the two topics ends now. */
  private async topicEnds(): Promise<TopicPartitionOffset[]> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const topics = [this.topics.events, this.topics.tokens];
      const ends = await Promise.all(topics.map((topic) => admin.fetchTopicOffsets(topic)));
      return topics.flatMap((topic, i) => ends[i].map(({ partition, high }) => ({ topic, partition, offset: high })));
    } finally {
      await admin.disconnect();
    }
  }

  /** Streams end before the HTTP server closes, or it would wait on them forever. */
  beforeApplicationShutdown(): void {
    for (const map of [this.listeners, this.watchers]) {
      for (const set of map.values()) for (const listener of set) listener.end();
      map.clear();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.sweeper);
    await this.commits?.flush();
    await this.consumer?.stop();
  }

  private dispatch(topic: string, message: KafkaMessage): void {
    if (topic === this.topics.events) {
      const event = this.announcedRecord(message) ?? ConversationEventRecord.safeParse(parseJson(message.value));
      if (!event.success) return this.skip(topic, message, event.error.message);
      const { conversation } = event.data;
      this.positions?.produced.saw(event.data.position);
      this.recent.remember(event.data, message.value?.length ?? 0);
      if (event.data.type === 'turn.ended') this.tokens.turnEnded(conversation, event.data.data.turn, Date.now());
      const waiting = this.watchers.get(conversation)?.size ?? 0;
      handOut(this.watchers, conversation, (watcher) => watcher.event(event.data), this.log);
      this.feedAfterAnswers(conversation, waiting, () => this.handOut(conversation, (listener) => listener.event(event.data)));
    } else {
      const token = TokenRecord.safeParse(parseJson(message.value));
      if (!token.success) return this.skip(topic, message, token.error.message);
      const conversation = token.data.conversation;
      const kept = this.tokens.keep(token.data, Number(message.offset), this.latestPosition(conversation), Date.now(), message.value?.length ?? 0);
      if (kept) this.handOut(conversation, (listener) => listener.token(kept));
    }
  }

  /** The record's event as its announcement brought it (by the relay's `event-id` header), taken out of `announced`. */
  private announcedRecord(message: KafkaMessage): { success: true; data: ConversationEvent } | undefined {
    const header = message.headers?.['event-id'];
    const event = header === undefined ? undefined : this.announced.take(header.toString());
    return event === undefined ? undefined : { success: true, data: event };
  }

  private handOut(conversation: string, give: (listener: LiveListener) => void): void {
    handOut(this.listeners, conversation, give, this.log);
  }

  /** The gateway only relays; a record it cannot read is the producer's bug, logged and skipped. */
  private skip(topic: string, message: KafkaMessage, reason: string): void {
    this.log.warn('skipped a record that does not parse', { topic, offset: message.offset, reason });
  }
}

/** Adds a listener of a conversation to `map`; the returned function removes it. */
function add(map: Map<string, Set<LiveListener>>, conversation: string, listener: LiveListener): () => void {
  let set = map.get(conversation);
  if (!set) map.set(conversation, (set = new Set()));
  set.add(listener);
  return () => {
    set.delete(listener);
    if (set.size === 0 && map.get(conversation) === set) map.delete(conversation);
  };
}

/**
 * Over a copy (a listener may unsubscribe while records are handed out), and one failing
 * listener never fails the consumer: that would redeliver the batch to every other one.
 */
function handOut(map: Map<string, Set<LiveListener>>, conversation: string, give: (listener: LiveListener) => void, log: Log): void {
  for (const listener of [...(map.get(conversation) ?? [])]) {
    try {
      give(listener);
    } catch (error) {
      log.warn('a stream failed to take a record; ending it', { conversation, error: String(error) });
      listener.end();
    }
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
