import type { IncomingMessage, ServerResponse } from 'node:http';
import { contextOf, otelContext, otelTrace, SpanKind, tracerOf, tracing } from '@rudder/runtime';

const tracer = tracerOf('gateway');

/**
 * Express middleware: each request in a server span (`POST /v1/conversations/:key/chat`, named
 * by its route once routed), active while the request is handled, so the records it produces
 * carry it (`InputsPublisher`). Nothing when tracing is off.
 */
export function traceRequests(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  if (!tracing()) return next();
  // A caller's own trace (its `traceparent` header) is continued; else the request starts one.
  const incoming = request.headers.traceparent;
  const parent = contextOf(typeof incoming === 'string' ? incoming : undefined);
  const span = tracer.startSpan(
    `${request.method} ${request.url?.split('?')[0]}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'url.path': request.url?.split('?')[0] } },
    parent,
  );
  response.on('close', () => {
    const route = (request as { route?: { path?: string } }).route?.path;
    if (route) span.updateName(`${request.method} ${route}`);
    span.setAttribute('http.response.status_code', response.statusCode);
    span.end();
  });
  otelContext.with(otelTrace.setSpan(parent, span), next);
}
