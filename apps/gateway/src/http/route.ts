import { applyDecorators, HttpCode, RequestMapping, RequestMethod, UseGuards, type Provider, type Type } from '@nestjs/common';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import type { ErrorShape } from '../errors/error-filter';
import { ReadRateGuard } from '../limits/read-rate.guard';

/** An HTTP method a route may have: any Nest routes (as OpenAPI spells it, lower case). */
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * One route: its method, its path (OpenAPI's `{param}` form) and its operation (params, body,
 * answers, errors, access). `readsConversation`: a `GET` that reads a conversation though its
 * path names no `{key}` (a response of the Responses door).
 */
export type RouteSpec = { method: Method; path: string; operation: Omit<ZodOpenApiOperationObject, 'operationId'>; readsConversation?: true };

/** Route entries by operation id. */
export type Routes = Readonly<Record<string, RouteSpec>>;

export const route = (method: Method, path: string, summary: string, operation: Omit<ZodOpenApiOperationObject, 'summary' | 'operationId'>): RouteSpec => ({
  method,
  path,
  operation: { summary, ...operation },
});

/** The answer status of a route: its one 2xx response. */
export const successStatus = (spec: RouteSpec): number => Number(Object.keys(spec.operation.responses ?? {}).find((status) => status.startsWith('2')) ?? 200);

/**
 * Whether a route reads a conversation, and so counts against its subject's read rate
 * (`ReadRateGuard`): a `GET` of a `{key}` route, or one marked `readsConversation`.
 */
export const readsConversation = (spec: RouteSpec): boolean => spec.method === 'get' && (spec.path.includes('{key}') || spec.readsConversation === true);

/**
 * Routes a controller method as its entry says: its method, its path (`{param}` → `:param`)
 * and its success status; a read of a conversation (`readsConversation`) also takes a token of
 * its subject's read rate, after the controller's `AuthGuard`.
 */
export const Route = (spec: RouteSpec): MethodDecorator => {
  const method = RequestMethod[spec.method.toUpperCase() as Uppercase<Method>];
  return applyDecorators(
    RequestMapping({ method, path: spec.path.replace(/\{(\w+)\}/g, ':$1') }),
    HttpCode(successStatus(spec)),
    ...(readsConversation(spec) ? [UseGuards(ReadRateGuard)] : []),
  );
};

/**
 * What one part of the gateway adds to it (an input kind, the reads, the event stream, a door):
 * its route entries, its controllers (each method routed by one of those entries, `@Route`), its
 * providers, and the error shapes of a door that answers in a protocol of its own. The route
 * table (routes.ts) and the module (gateway.module.ts) read the same list of parts.
 */
export type GatewayPart = {
  readonly routes: Routes;
  readonly controllers: readonly Type[];
  readonly providers: readonly Provider[];
  readonly errorShapes?: readonly ErrorShape[];
};

/** Parts as one (the input kinds as one part, say): their routes, controllers, providers and error shapes, in order. */
export function joinParts(parts: readonly GatewayPart[]): GatewayPart & { readonly errorShapes: readonly ErrorShape[] } {
  const routes: Record<string, RouteSpec> = {};
  for (const part of parts) {
    for (const [operationId, spec] of Object.entries(part.routes)) {
      if (operationId in routes) throw new Error(`two route entries have the operation id ${operationId}`);
      routes[operationId] = spec;
    }
  }
  return {
    routes,
    controllers: parts.flatMap((part) => part.controllers),
    providers: parts.flatMap((part) => part.providers),
    errorShapes: parts.flatMap((part) => part.errorShapes ?? []),
  };
}

/** The route table (routes.ts, `Routes`) as a provider: the OpenAPI document is made from it. */
export const ROUTE_TABLE = Symbol('RouteTable');
