import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from '../auth/auth.guard';
import { SubjectLimits } from './subject-limits';

/**
 * Counts every read of a conversation (a `GET` of a `{key}` route: status, transcript, turns,
 * the event stream; a response of the Responses door, `GET /v1/responses/{id}`) against its
 * subject's read rate. The route table puts it on those routes (`Route`, routes.ts), after the
 * controller's `AuthGuard` has named the subject and before the handler validates anything or
 * asks the companion: a stream of bad or waiting reads costs its sender like good ones do.
 */
@Injectable()
export class ReadRateGuard implements CanActivate {
  constructor(@Inject(SubjectLimits) private readonly limits: SubjectLimits) {}

  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
    if (principal === undefined) throw new Error('ReadRateGuard used without AuthGuard before it');
    this.limits.takeRead(principal.subject);
    return true;
  }
}
