/** Which commits handed over to the outbox relay follow what it published, and are published as they are (outbox-relay.ts, "From memory"). */
import type { ConversationEvent } from '@rudder/contracts';
import type { Written } from './writes';

/**
 * Splits commits into the events that follow what was `published`, per conversation, with
 * their traces, and the conversations to read from the table instead: those `readsTable`
 * already, and those with a commit whose `before` is past what was published (or missing).
 * All of a conversation's commits go one way.
 */
export function following(commits: readonly Written[], published: ReadonlyMap<string, number>, readsTable: (conversation: string) => boolean) {
  const of = new Map<string, { events: ConversationEvent[]; traces: (string | null)[]; follows: boolean; upTo: number }>();
  for (const commit of commits) {
    for (const event of commit.stored) {
      const c = event.conversation;
      let taken = of.get(c);
      if (!taken) of.set(c, (taken = { events: [], traces: [], follows: !readsTable(c), upTo: published.get(c) ?? 0 }));
      if (!taken.follows) continue;
      const before = commit.before.get(c);
      if (before === undefined || before > taken.upTo) {
        taken.follows = false;
        continue;
      }
      // An event at or below `upTo` was published already (a read of the table met its row).
      if (event.position <= taken.upTo) continue;
      taken.events.push(event);
      taken.traces.push(commit.trace);
      taken.upTo = event.position;
    }
  }
  const events: ConversationEvent[] = [];
  const traces: (string | null)[] = [];
  const fromTable: string[] = [];
  for (const [c, taken] of of) {
    if (!taken.follows) fromTable.push(c);
    else {
      events.push(...taken.events);
      traces.push(...taken.traces);
    }
  }
  return { events, traces, fromTable };
}
