import { context, INVALID_SPAN_CONTEXT, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/**
 * OpenTelemetry traces, one per input: the gateway's request, the `agent.inputs` record
 * (W3C `traceparent` header), the worker's turn with each model and tool call, the outbox
 * publication (the context stored with the events' rows, `traceparent` on `agent.events`), the
 * companion's fold. See docs/operations.md.
 *
 * Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, or a
 * test hands `startTracing` an exporter: then no provider is registered, the API's tracer is a
 * no-op, `traceparent()` answers null, and nothing is stored or sent.
 */
let provider: NodeTracerProvider | undefined;
const NOOP_SPAN = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Registers the process's tracer provider (once; later calls do nothing) when tracing is on. */
export function startTracing(service: string, options: { exporter?: SpanExporter } = {}): void {
  if (provider) return;
  const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!options.exporter && !endpoint) return;
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? `rudder-${service}` }),
    spanProcessors: [new BatchSpanProcessor(options.exporter ?? new OTLPTraceExporter())],
  });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
}

/** Sends the spans still held and stops tracing (a service's shutdown). */
export async function stopTracing(): Promise<void> {
  const stopping = provider;
  provider = undefined;
  await stopping?.shutdown();
}

/** The tracer of a service: its spans' instrumentation scope is `rudder-<service>`. */
export const tracerOf = (service: string) => trace.getTracer(`rudder-${service}`);
export type Tracer = ReturnType<typeof tracerOf>;

/** The W3C `traceparent` of a context (default: the active one); null when tracing is off or there is no span. */
export function traceparent(of: Context = context.active()): string | null {
  const carrier: Record<string, string> = {};
  propagation.inject(of, carrier);
  return carrier.traceparent ?? null;
}

/** The context a `traceparent` names (from a record's headers, a stored row); the root one without. */
export function contextOf(parent: string | Buffer | null | undefined): Context {
  if (!parent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent: parent.toString() });
}

/** Whether tracing is on in this process (cheap checks on the hot path). */
export const tracing = (): boolean => provider !== undefined;

/**
 * Runs `work` in a span named `name`, a child of `parent` (default: the active context), and
 * ends it with the outcome. When tracing is off it just runs `work`.
 */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: { parent?: Context; attributes?: Attributes; kind?: SpanKind },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!provider) return work(NOOP_SPAN);
  const span = tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, options.parent ?? context.active());
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => work(span));
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
    throw error;
  } finally {
    span.end();
  }
}

export { SpanKind, context as otelContext, trace as otelTrace };
