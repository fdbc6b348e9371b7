import { Module } from '@nestjs/common';
import { AIMessage } from '@langchain/core/messages';
import { MessagesAnnotation, StateGraph } from '@langchain/langgraph';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, humanInTheLoopMiddleware } from 'langchain';
import { langGraphAgent, langGraphGraph, type InterruptOn } from '@rudder/langgraph';
import { TurnWorkerModule } from '@rudder/turn-worker';
import { bookHotelTool, searchHotels, searchHotelsTool } from './trip-tools';

/** The team's chat model: OpenAI's Chat Completions, or any compatible server (OPENAI_BASE_URL). */
const model = () =>
  new ChatOpenAI({
    model: process.env.OPENAI_MODEL ?? 'gpt-4o-mini',
    apiKey: process.env.OPENAI_API_KEY,
    configuration: { baseURL: process.env.OPENAI_BASE_URL },
    streaming: true,
  });

/** Bookings wait for a person: the team's humanInTheLoopMiddleware config, which Rudder maps onto its approvals. */
const interruptOn: InterruptOn = { book_hotel: { allowedDecisions: ['approve', 'edit', 'reject'] } };

/** The team's agent, as LangChain's users make one. */
export const tripsAgent = createAgent({
  model: model(),
  tools: [searchHotelsTool, bookHotelTool],
  systemPrompt:
    'You plan trips. Search hotels before you suggest one; book only when asked. ' + 'The traveller may add to their request while you work: follow their latest words.',
  middleware: [humanInTheLoopMiddleware({ interruptOn })],
});

/** A graph of the team's own: it searches the city the last message names (if any), then asks the model. Rudder cannot enter it. */
export const tripsGraph = new StateGraph(MessagesAnnotation)
  .addNode('search', async (state, config) => {
    const city = /in (\w+)/.exec(state.messages.at(-1)?.text ?? '')?.[1];
    return { messages: [new AIMessage(city ? `hotels: ${await searchHotels(city, config.signal)}` : 'hotels: no city named')] };
  })
  .addNode('answer', async (state, config) => ({ messages: [await model().invoke(state.messages, config)] }))
  .addEdge('__start__', 'search')
  .addEdge('search', 'answer')
  .compile();

@Module({
  imports: [
    TurnWorkerModule.forRoot({
      agents: [
        langGraphAgent({ name: 'langgraph-trips', agent: tripsAgent, interruptOn, steering: { maxTaken: 8 }, maxSteps: 12 }),
        langGraphGraph({ name: 'langgraph-trips-graph', graph: tripsGraph }),
      ],
    }),
  ],
})
export class TripsModule {}
