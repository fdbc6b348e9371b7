import { Inject, Injectable, Optional, type CallHandler, type ExecutionContext, type NestInterceptor, type OnModuleDestroy } from '@nestjs/common';
import { from, mergeMap, type Observable } from 'rxjs';
import { In } from 'typeorm';
import type { ConversationEvent } from '@rudder/contracts';
import { FoldedPositions } from '../projection/folded-positions';
import { READ_MODELS, type ReadModels } from '../read-models/data-source';
import { Conversations } from '../read-models/entities';
import { CompanionError } from './errors';

/** How long a read waits for the view to reach the position asked for, and how often the waiting reads look, together. */
const WAIT_MS = 5000;
const POLL_MS = 15;

/** Nest token: how often the waiting reads poll (POLL_MS unless given; a test sets it long so that only folds wake them). */
export const READ_FLOOR_POLL_MS = Symbol('companion.read-floor-poll-ms');

type Request = { headers: Record<string, string | string[] | undefined>; params?: Record<string, string> };
type Response = { setHeader(name: string, value: string): void; headersSent: boolean };
type Waiter = { key: string; min: number; deadline: number; done(position: number | null): void };

/**
 * Read your writes: a read of a conversation that carries `rudder-min-position: N` (the gateway
 * sends the position of the writes it answered, or the one the client passed) is answered only
 * once the companion has folded that conversation up to N — waiting up to WAIT_MS, then 503
 * saying the view is behind.
 *
 * The waits are shared: a fold this process commits wakes the reads whose floor it reached at
 * once (`FoldedPositions`), and however many reads wait, of however many conversations, one
 * query every POLL_MS reads the positions of the conversations waited on and wakes the reads
 * whose floor is reached: the view is the database's, folded by whichever companion holds the
 * conversation's partition, which need not be this one. (With the poll alone, a read right
 * after a write waited for it: 23 ms at the median against 10–11, `bench/read-after-write.ts`.)
 *
 * Every answer about a conversation carries `Rudder-Position`: the position the view of it
 * had reached once the answer was read (0: none). Whatever the answer shows was produced at or
 * before it, so the gateway may answer a write it finds decided here with that position.
 */
@Injectable()
export class ReadFloorInterceptor implements NestInterceptor, OnModuleDestroy {
  /** The reads waiting, by conversation: a fold looks up only the conversations it folded. */
  private readonly waiting = new Map<string, Set<Waiter>>();
  private timer: NodeJS.Timeout | undefined;
  private readonly stopListening: () => void;

  constructor(
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    @Inject(FoldedPositions) folded: FoldedPositions,
    @Optional() @Inject(READ_FLOOR_POLL_MS) private readonly pollMs: number = POLL_MS,
  ) {
    this.stopListening = folded.listen((positions) => this.folded(positions));
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const raw = request.headers['rudder-min-position'];
    const key = request.params?.key;
    if (key === undefined) return next.handle();
    if (typeof raw === 'string') {
      const min = Number(raw);
      if (!Number.isSafeInteger(min) || min < 0) throw new CompanionError('bad_request', 'rudder-min-position is a non-negative integer');
      if (min > 0) await this.reached(key, min);
    }
    const response = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(
      mergeMap((answer) =>
        from(
          this.positionOf(key).then((position) => {
            if (!response.headersSent) response.setHeader('Rudder-Position', String(position));
            return answer;
          }),
        ),
      ),
    );
  }

  onModuleDestroy(): void {
    this.stopListening();
    clearTimeout(this.timer);
    for (const waiters of this.waiting.values()) for (const waiter of waiters) waiter.done(null);
    this.waiting.clear();
  }

  private async positionOf(key: string): Promise<number> {
    const row = await this.readModels.forKey(key).manager.findOne(Conversations, { select: { position: true }, where: { key } });
    return row?.position ?? 0;
  }

  /** Resolves once the view of `key` is at `min` or later; 503 after WAIT_MS. The first look is the read's own. */
  private async reached(key: string, min: number): Promise<void> {
    const now = await this.positionOf(key);
    if (now >= min) return;
    const position = await new Promise<number | null>((resolve) => {
      let waiters = this.waiting.get(key);
      if (!waiters) this.waiting.set(key, (waiters = new Set()));
      waiters.add({ key, min, deadline: Date.now() + WAIT_MS, done: resolve });
      this.schedule();
    });
    if (position === null || position < min) {
      throw new CompanionError('unavailable', `the read view of ${key} is at position ${position ?? now}, not yet at ${min}; try again`);
    }
  }

  /** A fold of this process committed `events`: the reads whose floor one of them reached go on. */
  private folded(events: readonly ConversationEvent[]): void {
    if (this.waiting.size === 0) return;
    for (const { conversation, position } of events) {
      const waiters = this.waiting.get(conversation);
      if (waiters) for (const waiter of waiters) if (position >= waiter.min) this.release(waiter, position);
    }
  }

  /** A waiting read goes on, its view of the conversation at `position` (null: the companion is stopping). */
  private release(waiter: Waiter, position: number | null): void {
    const waiters = this.waiting.get(waiter.key);
    waiters?.delete(waiter);
    if (waiters?.size === 0) this.waiting.delete(waiter.key);
    waiter.done(position);
  }

  private schedule(): void {
    if (this.timer === undefined && this.waiting.size > 0) this.timer = setTimeout(() => void this.poll(), this.pollMs);
  }

  /** One look for every read waiting: their conversations' positions in one query. */
  private async poll(): Promise<void> {
    // Every read the poll was for may have been woken by a fold meanwhile.
    if (this.waiting.size === 0) return void (this.timer = undefined);
    const keys = [...this.waiting.keys()];
    const waiters = [...this.waiting.values()].flatMap((set) => [...set]);
    let positions = new Map<string, number>();
    try {
      // Each primary asked about its conversations: one query per primary with reads waiting.
      const byShard = new Map<number, string[]>();
      for (const key of keys) {
        const shard = this.readModels.shardOfKey(key);
        byShard.set(shard, [...(byShard.get(shard) ?? []), key]);
      }
      const found = await Promise.all(
        [...byShard].map(([shard, some]) => this.readModels.all[shard].manager.find(Conversations, { select: { key: true, position: true }, where: { key: In(some) } })),
      );
      positions = new Map(found.flat().map((row) => [row.key, row.position]));
    } catch {
      // The database away: the reads keep waiting until their deadline (then 503).
    }
    const now = Date.now();
    for (const waiter of waiters) {
      const position = positions.get(waiter.key) ?? 0;
      if (position >= waiter.min || now > waiter.deadline) this.release(waiter, position);
    }
    this.timer = undefined;
    this.schedule();
  }
}
