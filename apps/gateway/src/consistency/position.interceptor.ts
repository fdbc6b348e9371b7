import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { tap, type Observable } from 'rxjs';
import { Positions, viewPosition } from './positions';

type Request = { method: string; params?: Record<string, string> };
type Response = { setHeader(name: string, value: string): void; headersSent: boolean };

/**
 * Every 2xx answer to a write of a conversation carries `Rudder-Position`: the log position of
 * the worker's decision it answered (or a later one of the same conversation). A read through
 * this gateway reflects at least it; through another, pass it as `Rudder-Min-Position`.
 *
 * A write answered from what the companion already knows (a chat or steer sent again with its
 * id, a retraction or promotion decided before) carries the position the companion's view of
 * the conversation had reached when it answered: the decision it found is at or before it.
 */
@Injectable()
export class PositionInterceptor implements NestInterceptor {
  constructor(@Inject(Positions) private readonly positions: Positions) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const key = request.params?.key;
    if (key === undefined || request.method === 'GET') return next.handle();
    return next.handle().pipe(
      tap(() => {
        const response = http.getResponse<Response>();
        const position = Math.max(this.positions.get(key), viewPosition());
        if (position > 0 && !response.headersSent) response.setHeader('Rudder-Position', String(position));
      }),
    );
  }
}
