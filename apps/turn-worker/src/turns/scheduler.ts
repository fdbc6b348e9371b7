import type { ConversationNews } from '../ingest/ingest-inputs';
import { ConversationRunner } from './conversation-runner';
import type { RunnerServices } from './runner-services';

/**
 * The conversations this worker runs. Each has one runner, so turns of one conversation run
 * strictly in order while different conversations run side by side.
 *
 * A runner keeps its conversation folded in memory; one that has been idle (nothing running or
 * waiting) for `idleForgetMs` is let go, so memory follows the conversations in use, not every
 * one ever seen. Its next input reads its log again.
 */
export function createScheduler(services: RunnerServices, idleForgetMs: number) {
  const runners = new Map<string, { partition: number; runner: ConversationRunner; pokedAt: number }>();
  const forget = setInterval(() => {
    const before = Date.now() - idleForgetMs;
    for (const [key, entry] of runners) if (entry.pokedAt < before && entry.runner.idle()) runners.delete(key);
  }, Math.min(idleForgetMs, 10_000));
  forget.unref();
  return {
    /** Runs what is due in these conversations; `news`: what a write just stored there (the runner may fold it without a read). */
    poke(conversations: Iterable<{ conversation: string; partition: number; news?: ConversationNews }>) {
      for (const { conversation, partition, news } of conversations) {
        let entry = runners.get(conversation);
        if (!entry) runners.set(conversation, (entry = { partition, runner: new ConversationRunner(conversation, partition, services), pokedAt: 0 }));
        entry.pokedAt = Date.now();
        entry.runner.poke(news);
      }
    },
    /** A stop was stored: the conversation's running turn (if this worker runs it) ends `stopped`. */
    stopTurn(conversation: string, partition: number) {
      this.poke([{ conversation, partition }]);
      runners.get(conversation)?.runner.stopTurn();
    },
    /** An interrupt or a graceful stop was stored for `turn`: its tools see `windDown` (if this worker runs it). */
    windDown(conversation: string, turn: string) {
      runners.get(conversation)?.runner.windDown(turn);
    },
    /** Lets go of the conversations of partitions no longer owned: their turns resume on the new owner. */
    async keepOnly(owned: ReadonlySet<number>) {
      const released = [...runners].filter(([, entry]) => !owned.has(entry.partition));
      for (const [key] of released) runners.delete(key);
      await Promise.all(released.map(([, entry]) => entry.runner.abort()));
    },
    /** What the runner of the conversation holds of it, if there is one (see `ConversationRunner.seen`). */
    seen: (conversation: string) => runners.get(conversation)?.runner.seen(),
    /** How many conversations are held in memory now. */
    held: () => runners.size,
    async stop() {
      clearInterval(forget);
      const all = [...runners.values()];
      runners.clear();
      await Promise.all(all.map((entry) => entry.runner.abort()));
    },
  };
}
export type Scheduler = ReturnType<typeof createScheduler>;
