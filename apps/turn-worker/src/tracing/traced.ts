import type { ModelClient, Tool } from '@rudder/agent';
import { inSpan, SpanKind, tracerOf, tracing } from '@rudder/runtime';

const tracer = tracerOf('turn-worker');

/** Each model request a span of the running turn's (`model request`, a client span), when tracing is on. */
export function tracedModel(model: ModelClient, agent: string): ModelClient {
  return {
    reply: (request) =>
      tracing()
        ? inSpan(tracer, 'model request', { kind: SpanKind.CLIENT, attributes: { 'rudder.agent': agent, 'rudder.messages': request.messages.length } }, async (span) => {
            const reply = await model.reply(request);
            if (reply.usage) span.setAttributes({ 'gen_ai.usage.input_tokens': reply.usage.promptTokens, 'gen_ai.usage.output_tokens': reply.usage.completionTokens });
            return reply;
          })
        : model.reply(request),
  };
}

/** Each run of a tool a span of the running turn's (`tool <name>`), when tracing is on. */
export const tracedTool = (tool: Tool): Tool => ({
  ...tool,
  run: (args, context) =>
    tracing()
      ? inSpan(tracer, `tool ${tool.name}`, { attributes: { 'rudder.tool': tool.name, 'rudder.call': context.callId, 'rudder.turn': context.turn } }, () => tool.run(args, context))
      : tool.run(args, context),
});
