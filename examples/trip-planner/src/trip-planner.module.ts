import { Module } from '@nestjs/common';
import { TurnWorkerModule, type AgentDefinition } from '@rudder/turn-worker';
import { Hotels } from './hotels';
import { TripTools } from './trip-tools';

export const tripPlanner: AgentDefinition = {
  name: 'trip-planner',
  instructions: ({ conversation }) =>
    `You plan trips (conversation ${conversation}). Search hotels before you suggest one; book only when asked. ` +
    'The traveller may add to their request while you work: follow their latest words.',
  tools: [TripTools],
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
