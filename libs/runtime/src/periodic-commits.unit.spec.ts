import type { Consumer, TopicPartitionOffset } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { periodicCommits } from './kafka';
import { createLog } from './log';

/** The part of a kafkajs consumer `periodicCommits` uses: its commits are recorded, GROUP_JOIN can be fired. */
function consumerDouble(fail = false) {
  const commits: TopicPartitionOffset[][] = [];
  const joins: (() => void)[] = [];
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join' },
    on: (event: string, listener: () => void) => {
      if (event === 'consumer.group_join') joins.push(listener);
      return () => undefined;
    },
    commitOffsets: async (offsets: TopicPartitionOffset[]) => {
      commits.push(offsets);
      if (fail) throw new Error('coordinator away');
    },
  } as unknown as Consumer;
  return { consumer, commits, join: () => joins.forEach((listener) => listener()) };
}

const log = createLog('spec', { level: 'silent' });

describe('periodicCommits', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('commits at most once per interval, the offset after the last record handled of each partition', async () => {
    const { consumer, commits } = consumerDouble();
    const committer = periodicCommits(consumer, 1000, log);
    committer.handled('events', 0, '7');
    committer.handled('events', 0, '8');
    committer.handled('events', 1, '3');
    await committer.due();
    expect(commits).toEqual([]);
    vi.setSystemTime(Date.now() + 1000);
    committer.handled('tokens', 0, '41');
    await committer.due();
    expect(commits).toEqual([
      [
        { topic: 'events', partition: 0, offset: '9' },
        { topic: 'events', partition: 1, offset: '4' },
        { topic: 'tokens', partition: 0, offset: '42' },
      ],
    ]);
    committer.handled('events', 0, '9');
    await committer.due();
    expect(commits).toHaveLength(1);
    await committer.flush();
  });

  it('commits what a quiet consumer handled once the interval has passed, and the rest at a flush', async () => {
    const { consumer, commits } = consumerDouble();
    const committer = periodicCommits(consumer, 1000, log);
    committer.handled('events', 2, '10');
    await vi.advanceTimersByTimeAsync(2000);
    expect(commits).toEqual([[{ topic: 'events', partition: 2, offset: '11' }]]);
    committer.handled('events', 2, '11');
    await committer.flush();
    expect(commits.at(-1)).toEqual([{ topic: 'events', partition: 2, offset: '12' }]);
    await vi.advanceTimersByTimeAsync(5000);
    expect(commits).toHaveLength(2);
  });

  it('forgets what was handled before a new assignment (those partitions may be another member’s now)', async () => {
    const { consumer, commits, join } = consumerDouble();
    const committer = periodicCommits(consumer, 1000, log);
    committer.handled('events', 0, '5');
    join();
    await committer.flush();
    expect(commits).toEqual([]);
  });

  it('drops a commit that fails: what came after the last commit is read again', async () => {
    const { consumer, commits } = consumerDouble(true);
    const committer = periodicCommits(consumer, 1000, log);
    committer.handled('events', 0, '1');
    await committer.flush();
    expect(commits).toHaveLength(1);
    await committer.flush(); // nothing is left to commit
    expect(commits).toHaveLength(1);
  });
});
