import type { IncomingMessage } from 'node:http';
import { Inject, Injectable, createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Authenticator } from './authenticator';

/** A request once the guard has authenticated it. */
type AuthenticatedRequest = IncomingMessage & { subject?: string };

/**
 * Authenticates every route of the controllers that use it (all of `/v1`): 401 before any
 * validation or lookup happens, so an unauthenticated caller learns nothing about keys.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(@Inject(Authenticator) private readonly authenticator: Authenticator) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    request.subject = this.authenticator.subjectOf(request.headers.authorization);
    return true;
  }
}

/** The authenticated subject of the request (see `AuthGuard`). */
export const Subject = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const subject = context.switchToHttp().getRequest<AuthenticatedRequest>().subject;
  if (subject === undefined) throw new Error('Subject() used on a route without AuthGuard');
  return subject;
});
