import { Usage, type Model, type ModelRequest, type ModelResponse, type StreamEvent } from '@openai/agents';
import type { DurableTurn, ModelReply } from '@rudder/agent';
import { answeredCalls, resultsOf, toOutputItems, toReply, withSteers } from './items';

/**
 * The framework's model for a turn's top-level agents: the agent's own model (`inner`, the team's
 * object, asked unchanged) behind the turn's `DurableTurn`. Each request the framework makes is a
 * step: a stored one is answered from the log (the framework gets the reply back as its own
 * response, with the log's call ids), a new one is asked with the steers the step took placed in
 * it as the framework's own user messages, streamed (its text goes to the turn's tokens), and
 * stored. Only the agents the adapter gives this model go through it: an agent used as a tool
 * keeps its own model, so its run takes no steer and stores nothing as the turn's.
 */
export class DurableModel implements Model {
  constructor(
    private readonly inner: Model,
    private readonly durable: DurableTurn,
    /** Every result the run made or saw, by call id: a handoff's output its filter dropped is put back from here. */
    private readonly known: Map<string, string>,
  ) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const reply = await this.asked(request);
    return { usage: usageOf(reply), output: toOutputItems(reply) };
  }

  /** The framework's request as the turn's step: answered from the log, or asked and stored. */
  private async asked(request: ModelRequest): Promise<ModelReply> {
    const items = typeof request.input === 'string' ? [{ role: 'user' as const, content: request.input }] : request.input;
    for (const [callId, output] of resultsOf(items)) this.known.set(callId, output);
    const answered = answeredCalls(items, this.known);
    return this.durable.model(async ({ steers, signal, onToken }) => {
      const input = withSteers(answered, steers);
      let done: ModelResponse | undefined;
      for await (const event of this.inner.getStreamedResponse({ ...request, input, signal })) {
        if (event.type === 'output_text_delta') onToken(event.delta);
        else if (event.type === 'response_done') done = { usage: new Usage(event.response.usage), output: event.response.output, responseId: event.response.id };
      }
      if (!done) throw new Error("the agent's model ended its stream without a response");
      return toReply(done);
    }, this.known);
  }

  /** The framework asks for a stream when its run streams: the step is the same, answered as one event. */
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const reply = await this.asked(request);
    const { inputTokens, outputTokens, totalTokens } = usageOf(reply);
    yield { type: 'response_done', response: { id: '', usage: { inputTokens, outputTokens, totalTokens }, output: toOutputItems(reply) } };
  }
}

/** A reply answered from the log was paid for by the run that asked it. */
function usageOf(reply: ModelReply): Usage {
  const usage = reply.usage;
  return new Usage(usage ? { requests: 1, inputTokens: usage.promptTokens, outputTokens: usage.completionTokens, totalTokens: usage.totalTokens } : { requests: 0 });
}
