import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult, LanguageModelV3Prompt, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { ToolCall, Usage } from '@rudder/contracts';
import type { DurableTurn, ModelReply, Steer } from '@rudder/agent';

/**
 * The agent's model made durable (`DurableTurn.model`): each request the AI SDK's loop makes is
 * a step of the log. A stored step is answered from the log; a new one takes the turn's steers
 * (`withSteers`), asks the team's own model — streaming, so its tokens reach the turn's stream —
 * and is stored before the AI SDK sees it. Either way the AI SDK gets one generate result, with
 * the log's call ids.
 */
export function durableModel(model: LanguageModelV3, durable: DurableTurn): LanguageModelV3 {
  const generate = async (params: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> => {
    const reply = await durable.model(
      async ({ steers, signal, onToken }) => streamedReply(await model.doStream({ ...params, prompt: withSteers(params.prompt, steers), abortSignal: signal }), onToken),
      toolOutputs(params.prompt),
    );
    return generateResult(reply);
  };
  return {
    // The team's model's own version (`ai` 7's are `v4`): the AI SDK that calls it calls this the same way.
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: generate,
    // `streamText` on the durable model: the step's reply, once stored, as one stream.
    doStream: async (params) => ({ stream: replyStream(await generate(params)) }),
  };
}

/**
 * The request with each steer as a user message of its own right after the results of the
 * calls it came after; one whose results the request does not hold (trimmed by the team's
 * `prepareStep`, say) is left out, so no request starts at a steered message.
 */
export function withSteers(prompt: LanguageModelV3Prompt, steers: readonly Steer[]): LanguageModelV3Prompt {
  const request = [...prompt];
  for (const steer of steers) {
    const at = request.findLastIndex((m) => m.role === 'tool' && m.content.some((part) => part.type === 'tool-result' && steer.afterCalls.includes(part.toolCallId)));
    if (at !== -1) request.splice(at + 1, 0, { role: 'user', content: [{ type: 'text', text: steer.text }] });
  }
  return request;
}

/** The results the request holds, by call id, as text (as the Chat Completions API is sent them). */
function toolOutputs(prompt: LanguageModelV3Prompt): Map<string, string> {
  const outputs = new Map<string, string>();
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const { output } = part;
      const text =
        output.type === 'text' || output.type === 'error-text'
          ? output.value
          : output.type === 'json' || output.type === 'error-json'
            ? JSON.stringify(output.value)
            : output.type === 'execution-denied'
              ? `denied: ${output.reason ?? 'no reason given'}`
              : JSON.stringify(output.value);
      outputs.set(part.toolCallId, text);
    }
  }
  return outputs;
}

/** Reads the team's model's stream to its end: the reply it makes, each piece of text passed on as it comes. */
async function streamedReply({ stream }: { stream: ReadableStream<LanguageModelV3StreamPart> }, onToken: (text: string) => void): Promise<ModelReply> {
  let content = '';
  let usage: Usage | undefined;
  const toolCalls: ToolCall[] = [];
  for await (const part of stream) {
    if (part.type === 'text-delta') {
      content += part.delta;
      onToken(part.delta);
    } else if (part.type === 'tool-call') {
      toolCalls.push({ id: part.toolCallId, name: part.toolName, arguments: part.input });
    } else if (part.type === 'finish') {
      const promptTokens = part.usage.inputTokens.total ?? 0;
      const completionTokens = part.usage.outputTokens.total ?? 0;
      if (part.usage.inputTokens.total !== undefined) usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
    } else if (part.type === 'error') {
      throw part.error;
    }
  }
  return { content, toolCalls, ...(usage ? { usage } : {}) };
}

function generateResult(reply: ModelReply): LanguageModelV3GenerateResult {
  const content: LanguageModelV3Content[] = [
    ...(reply.content === '' ? [] : [{ type: 'text' as const, text: reply.content }]),
    ...reply.toolCalls.map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: call.arguments })),
  ];
  return {
    content,
    finishReason: { unified: reply.toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
    usage: {
      inputTokens: { total: reply.usage?.promptTokens, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: reply.usage?.completionTokens, text: undefined, reasoning: undefined },
    },
    warnings: [],
  };
}

function replyStream(result: LanguageModelV3GenerateResult): ReadableStream<LanguageModelV3StreamPart> {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  for (const part of result.content) {
    if (part.type === 'text') parts.push({ type: 'text-start', id: '0' }, { type: 'text-delta', id: '0', delta: part.text }, { type: 'text-end', id: '0' });
    else parts.push(part as LanguageModelV3StreamPart);
  }
  parts.push({ type: 'finish', usage: result.usage, finishReason: result.finishReason });
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}
