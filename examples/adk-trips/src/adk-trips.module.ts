import { Module } from '@nestjs/common';
import { adkAgent } from '@rudder/adk';
import { TurnWorkerModule } from '@rudder/turn-worker';
import { tripAgent } from './trip-agent';

/** The ADK agent as the worker's agent `adk-trips`: its instructions, model and tools are ADK's; steering, approvals and exactly-once are Rudder's. */
export const adkTrips = adkAgent({
  name: 'adk-trips',
  agent: tripAgent,
  steering: { maxTaken: 8 },
  maxSteps: 12,
});

@Module({
  imports: [TurnWorkerModule.forRoot({ agents: [adkTrips] })],
})
export class AdkTripsModule {}
