import { keepConsuming, periodicCommits, READER_SESSION, type KeptConsumer, type Log, type PeriodicCommits } from '@rudder/runtime';
import type { Kafka, KafkaMessage, TopicPartitionOffset } from 'kafkajs';

/** Bounds how long boot waits for the consumer to be positioned at the end of its topics. */
const READY_TIMEOUT_MS = 30_000;
/** How often the consumer's offsets are committed (see `start`). */
const COMMIT_EVERY_MS = 1000;
/**
 * The live consumer's fetches are answered in batches, at most this long after they were sent:
 * each asks for more bytes than come (`RECORDS_HELD_BYTES`), so the broker holds it until then. What
 * a stream or a write waits for comes first by announcement (`LiveEvents.noticed`): records are its
 * fallback (an announcement missed or too large, announcing stopped) and the tokens, which 50 ms
 * more hardly delay (the worker gathers a step's tokens for 40 ms). Answered at each record instead,
 * a turn's every commit woke the broker and this gateway in the turn's own milliseconds: a one-tool
 * turn of a new conversation ended 3–4 ms later, a steer was answered 2–3 ms later (docs/performance.md).
 */
const RECORDS_BATCHED_MS = 50;
/** More than a fetch gets in `RECORDS_BATCHED_MS` short of a flood (kafkajs asks for at most 10 MB a fetch, 1 MB a partition). */
const RECORDS_HELD_BYTES = 1024 * 1024;

/** The topics the live consumer reads. */
export type LiveTopics = { events: string; tokens: string };

/**
 * The gateway's one Kafka consumer of `agent.events` and `agent.tokens` (`LiveEvents` fans what
 * it reads out).
 *
 * Every gateway process must see every record (a client's stream may be on any replica), so
 * each process has a consumer group of its own, `groupId`, that starts at the end of the
 * topics (what came before is the store's to replay). A restarted gateway is a new group;
 * within a process the group's offsets are committed from its first fetch on, so a consumer
 * kafkajs had to replace resumes where the last one was (see `start`).
 *
 * Its fetches are answered in batches, every 50 ms at most (`RECORDS_BATCHED_MS`).
 */
export class LiveConsumer {
  private consumer: KeptConsumer | undefined;
  private commits: PeriodicCommits | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly topics: LiveTopics,
    private readonly groupId: string,
    private readonly log: Log,
  ) {}

  /**
   * Starts consuming, handing every record to `dispatch`. Resolves once the consumer has joined
   * and completed a first fetch, i.e. has resolved its start offsets (a stream opened after boot
   * sees every event published after it opened), or after READY_TIMEOUT_MS, logged.
   */
  async start(dispatch: (topic: string, message: KafkaMessage) => void): Promise<void> {
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
        // At its first fetch: before that (at the join, say) kafkajs drops a commit unsent. One
        // that fails (a coordinator moving, a rebalance) is sent again at the next fetch, while
        // nothing was handled yet (after that the periodic commits say where it is).
        let committing = false;
        const fetching = consumer.on(consumer.events.FETCH_START, () => {
          const offsets = startAt;
          if (!offsets || committing) return;
          committing = true;
          consumer.commitOffsets(offsets).then(
            () => {
              startAt = undefined;
              fetching();
            },
            (error: unknown) => {
              committing = false;
              this.log.warn("committing the live consumer's first offsets failed; sent again at its next fetch", { error: String(error) });
            },
          );
        });
        await consumer.connect();
        await consumer.subscribe({ topics: [this.topics.events, this.topics.tokens], fromBeginning: false });
        void this.commits?.flush(); // a consumer kafkajs gave up on: its timer stops
        const commits = (this.commits = periodicCommits(consumer, COMMIT_EVERY_MS, this.log));
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ topic, partition, message }) => {
            startAt = undefined;
            dispatch(topic, message);
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

  /** Commits what was handled, then stops consuming. */
  async stop(): Promise<void> {
    await this.commits?.flush();
    await this.consumer?.stop();
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
}
