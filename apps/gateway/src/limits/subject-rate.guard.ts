import { Inject, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest } from '../auth/auth.guard';
import { SubjectLimits } from './subject-limits';

/**
 * A guard that takes a token of one of the subject's rates (`take`) for every request to its
 * routes, after `AuthGuard` has named the subject (list it after it) and before the request
 * is validated: a stream of bad requests costs its sender like good ones do.
 */
export abstract class SubjectRateGuard implements CanActivate {
  constructor(@Inject(SubjectLimits) protected readonly limits: SubjectLimits) {}

  /** Takes the token; throws 429 `rate_limited` when the subject has none left. */
  protected abstract take(subject: string): void;

  canActivate(context: ExecutionContext): boolean {
    const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
    if (principal === undefined) throw new Error(`${this.constructor.name} used without AuthGuard before it`);
    this.take(principal.subject);
    return true;
  }
}
