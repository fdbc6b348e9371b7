import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from '../auth/auth.guard';
import { SubjectLimits } from './subject-limits';

/**
 * Counts every request to a route that produces an input (chat, steer, stop, retract,
 * promote) against its subject's rate, after `AuthGuard` (list it second) and before the
 * request is validated: a stream of bad requests costs its sender like good ones do.
 */
@Injectable()
export class InputRateGuard implements CanActivate {
  constructor(@Inject(SubjectLimits) private readonly limits: SubjectLimits) {}

  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
    if (principal === undefined) throw new Error('InputRateGuard used without AuthGuard before it');
    this.limits.takeInput(principal.subject);
    return true;
  }
}
