import { isResponsesPath } from '../responses/protocol-errors';
import { Inject, Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/auth.guard';
import { SubjectLimits } from './subject-limits';

type Request = AuthenticatedRequest & { method: string; params?: Record<string, string> };

/**
 * Counts every read of a conversation (a GET of a `{key}` route: status, transcript, turns,
 * the event stream; a response of the Responses door, `GET /v1/responses/{id}`) against its subject's read rate. An interceptor, so it runs after the
 * route's `AuthGuard` has named the subject and before the handler validates anything or asks
 * the companion: a stream of bad or waiting reads costs its sender like good ones do.
 */
@Injectable()
export class ReadRateInterceptor implements NestInterceptor {
  constructor(@Inject(SubjectLimits) private readonly limits: SubjectLimits) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const ofConversation = request.params?.key !== undefined || (request.params?.id !== undefined && isResponsesPath(request.url));
    if (request.method === 'GET' && ofConversation && request.principal !== undefined) this.limits.takeRead(request.principal.subject);
    return next.handle();
  }
}
