import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Observable } from 'rxjs';
import type { DataSource } from 'typeorm';
import { READ_MODELS } from '../read-models/data-source';
import { Conversations } from '../read-models/entities';
import { CompanionError } from './errors';

/** How long a read waits for the view to reach the position asked for, and how often it looks. */
const WAIT_MS = 5000;
const POLL_MS = 15;

type Request = { headers: Record<string, string | string[] | undefined>; params?: Record<string, string> };

/**
 * Read your writes: a read of a conversation that carries `rudder-min-position: N` (the gateway
 * sends the position of the writes it answered, or the one the client passed) is answered only
 * once the companion has folded that conversation up to N — waiting up to WAIT_MS, then 503
 * saying the view is behind.
 */
@Injectable()
export class ReadFloorInterceptor implements NestInterceptor {
  constructor(@Inject(READ_MODELS) private readonly readModels: DataSource) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const raw = request.headers['rudder-min-position'];
    const key = request.params?.key;
    if (typeof raw === 'string' && key !== undefined) {
      const min = Number(raw);
      if (!Number.isSafeInteger(min) || min < 0) throw new CompanionError('bad_request', 'rudder-min-position is a non-negative integer');
      if (min > 0) await this.reached(key, min);
    }
    return next.handle();
  }

  private async reached(key: string, min: number): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const row = await this.readModels.manager.findOne(Conversations, { select: { position: true }, where: { key } });
      const position = row?.position ?? 0;
      if (position >= min) return;
      if (Date.now() > deadline) throw new CompanionError('unavailable', `the read view of ${key} is at position ${position}, not yet at ${min}; try again`);
      await sleep(POLL_MS);
    }
  }
}
