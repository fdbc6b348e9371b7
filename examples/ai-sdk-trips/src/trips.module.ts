import { Module } from '@nestjs/common';
import { aiSdkAgent } from '@rudder/ai-sdk';
import { TurnWorkerModule } from '@rudder/turn-worker';
import { tripsAgent } from './trips-agent';

/** The worker's agents: the team's AI SDK agent, unchanged, with Rudder's own settings beside it. */
@Module({
  imports: [TurnWorkerModule.forRoot({ agents: [aiSdkAgent({ name: 'ai-sdk-trips', agent: tripsAgent, steering: { maxTaken: 8 }, maxSteps: 12 })] })],
})
export class TripsModule {}
