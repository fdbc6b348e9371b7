import type { IncomingMessage } from 'node:http';
import { Inject, Injectable, SetMetadata, createParamDecorator, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GatewayError } from '../errors/gateway-error';
import { Authenticator, type Principal } from './authenticator';

/** A request once the guard has authenticated it. */
export type AuthenticatedRequest = IncomingMessage & {
  principal?: Principal;
  params?: Record<string, string>;
  query?: Record<string, unknown>;
};

const STREAM_ROUTE = Symbol('rudder.streamRoute');

/**
 * Marks the route that serves a conversation's event stream: the only one that takes a
 * stream token, and the only one that reads a token from `?access_token=` (an EventSource
 * cannot set headers). Its `:key` parameter must be the token's conversation.
 */
export const StreamRoute = () => SetMetadata(STREAM_ROUTE, true);

/**
 * Authenticates every route of the controllers that use it (all of `/v1`): 401 before any
 * validation or lookup happens, so an unauthenticated caller learns nothing about keys.
 * A stream token passes only on a `@StreamRoute()` of its own conversation; anywhere else
 * it is 403 `forbidden`.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Authenticator) private readonly authenticator: Authenticator,
    @Inject(Reflector) private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const streamRoute = this.reflector.get<boolean | undefined>(STREAM_ROUTE, context.getHandler()) === true;
    const principal = await this.authenticator.authenticate(request.headers.authorization, streamRoute ? accessTokenOf(request) : undefined);
    if (principal.stream !== null) {
      if (!streamRoute) throw new GatewayError('forbidden', 'a stream token opens an event stream only (GET /v1/conversations/{key}/events)');
      if (request.params?.key !== principal.stream) {
        throw new GatewayError('forbidden', `this stream token opens only the event stream of conversation ${principal.stream}`);
      }
    }
    request.principal = principal;
    return true;
  }
}

function accessTokenOf(request: AuthenticatedRequest): string | undefined {
  const value = request.query?.access_token;
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new GatewayError('unauthorized', 'access_token must be given once, as a token');
  return value;
}

/** The authenticated subject of the request (see `AuthGuard`). */
export const Subject = createParamDecorator((_: unknown, context: ExecutionContext): string => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (principal === undefined) throw new Error('Subject() used on a route without AuthGuard');
  return principal.subject;
});
