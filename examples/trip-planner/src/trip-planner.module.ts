import { fileURLToPath } from 'node:url';
import { Module } from '@nestjs/common';
import { TurnWorkerModule, type AgentDefinition } from '@rudder/turn-worker';
import { Hotels } from './hotels';
import { TripTools } from './trip-tools';

export const tripPlanner: AgentDefinition = {
  name: 'trip-planner',
  instructions: ({ conversation }) =>
    `You plan trips (conversation ${conversation}). Search hotels before you suggest one; book only when asked; ` +
    'check the forecast when the weather matters. ' +
    'The traveller may add to their request while you work: follow their latest words.',
  tools: [TripTools],
  // Tools from an MCP server: the weather server over stdio, which each worker starts (with tsx,
  // as the example runs); only `forecast` is offered, with the schema the server lists.
  mcp: [{ name: 'weather', command: process.execPath, args: ['--import', 'tsx', fileURLToPath(new URL('./weather-server.ts', import.meta.url))], tools: ['forecast'] }],
  steering: { maxTaken: 8 },
  maxSteps: 12,
  // Every chat and every steer passes it; a refusal answers 422 and never reaches the model.
  guard: ({ text }) => (/\b\d{13,19}\b/.test(text) ? { refuse: 'card numbers are not taken in chat; the booking page asks for them' } : null),
};

@Module({
  imports: [TurnWorkerModule.forRoot({ agents: [tripPlanner] })],
  providers: [Hotels, TripTools],
})
export class TripPlannerModule {}
