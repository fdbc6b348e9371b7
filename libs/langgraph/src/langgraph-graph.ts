import type { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import { DurableTurn, type ModelReply } from '@rudder/agent';
import type { AgentDefinition } from '@rudder/turn-worker';
import type { RudderSettings } from './langgraph-agent';
import { toLangChain } from './messages';
import { TokenSink } from './tokens';

/** A compiled graph of the team's own over a `messages` channel (`StateGraph(MessagesAnnotation)`, say). */
export type MessagesGraph = {
  invoke(input: { messages: BaseMessage[] }, config: { signal: AbortSignal; recursionLimit: number; callbacks: BaseCallbackHandler[] }): Promise<{ messages: BaseMessage[] }>;
};

export type LangGraphGraphOptions = Omit<RudderSettings, 'steering'> & { name: string; graph: MessagesGraph; recursionLimit?: number };

/**
 * A LangGraph graph Rudder cannot enter: a `StateGraph` of the team's own, with no agent
 * middleware where its model requests and tool calls could be made durable or steered. Its
 * whole run is one step of the turn: run from the turn's input, its last message is the turn's
 * answer, stored as the step's reply (a resumed run answers it from the log and runs nothing).
 * Its turns take no steers (`steering.maxTaken: 0`): every steer is answered `landed: false` and
 * runs as a turn of its own, in order.
 */
export function langGraphGraph({ name, graph, recursionLimit = 25, ...settings }: LangGraphGraphOptions): AgentDefinition {
  return {
    name,
    instructions: '',
    ...settings,
    steering: { maxTaken: 0 },
    loop: (options) => {
      const durable = new DurableTurn(options);
      return durable.run(async (input) => {
        const messages = toLangChain(input);
        await durable.model(async ({ signal }) => {
          // Its models' replies are not the turn's answer as they come: none streams to the turn (see TokenSink for why it is given).
          const state = await graph.invoke({ messages }, { signal, recursionLimit, callbacks: [new TokenSink()] });
          return answerOf(state.messages.slice(messages.length));
        });
      });
    },
  };
}

/** The graph's answer: its last message's text, with the usage of every model reply it made on the way. */
function answerOf(made: readonly BaseMessage[]): ModelReply {
  const replies = made.filter((m): m is AIMessage => AIMessage.isInstance(m));
  const usage = replies.flatMap((m) => (m.usage_metadata ? [m.usage_metadata] : []));
  return {
    content: made.at(-1)?.text ?? '',
    toolCalls: [],
    ...(usage.length > 0
      ? {
          usage: {
            promptTokens: usage.reduce((sum, u) => sum + u.input_tokens, 0),
            completionTokens: usage.reduce((sum, u) => sum + u.output_tokens, 0),
            totalTokens: usage.reduce((sum, u) => sum + u.total_tokens, 0),
          },
        }
      : {}),
  };
}
