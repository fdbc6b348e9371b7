import type { ConversationEvent } from '@rudder/contracts';

/**
 * The events announced lately (`LiveEvents.noticed`), by id, until their records come on
 * `agent.events`: a record whose `event-id` header names one is that event, already parsed, and
 * is not parsed again (`take`). Two generations, the older dropped at each `sweep`, so one whose
 * record never came here is kept one to two sweeps; at most `budget` characters of announcements
 * in all (records held up, say while the broker is away, are parsed as they come rather than
 * kept for).
 */
export class AnnouncedEvents {
  private now = new Map<string, Kept>();
  private before = new Map<string, Kept>();
  private kept = 0;

  constructor(private readonly budget: number) {}

  /** Keeps `event` for its record, counted as `size` characters of its announcement; not when that passes the budget. */
  keep(event: ConversationEvent, size: number): void {
    if (this.kept + size > this.budget || this.now.has(event.id) || this.before.has(event.id)) return;
    this.now.set(event.id, { event, size });
    this.kept += size;
  }

  /** The event announced under `id`, let go; undefined when none is kept. */
  take(id: string): ConversationEvent | undefined {
    const found = this.now.get(id) ?? this.before.get(id);
    if (found === undefined) return undefined;
    this.now.delete(id);
    this.before.delete(id);
    this.kept -= found.size;
    return found.event;
  }

  /** Lets go of what was kept before the last sweep. */
  sweep(): void {
    for (const { size } of this.before.values()) this.kept -= size;
    this.before = this.now;
    this.now = new Map();
  }

  /** How many events are kept. */
  get size(): number {
    return this.now.size + this.before.size;
  }
}

type Kept = { event: ConversationEvent; size: number };
