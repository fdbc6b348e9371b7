import { Module } from '@nestjs/common';
import { openAiAgentsAgent } from '@rudder/openai-agents';
import { TurnWorkerModule } from '@rudder/turn-worker';
import { tripsAgent } from './trips-agent';

/** The team's worker: its OpenAI Agents SDK agent, registered through the adapter like any Rudder agent. */
@Module({
  imports: [
    TurnWorkerModule.forRoot({
      agents: [openAiAgentsAgent({ name: 'openai-trips', agent: tripsAgent(), steering: { maxTaken: 8 }, maxSteps: 12 })],
    }),
  ],
})
export class TripsModule {}
