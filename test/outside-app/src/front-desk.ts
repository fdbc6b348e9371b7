import { Inject, Injectable, Module } from '@nestjs/common';
import { AgentTool, TurnWorkerModule, type AgentDefinition, type ToolContext } from '@rudder/turn-worker';
import { z } from 'zod';
import { concierge } from './concierge.js';

/**
 * The front desk the agent's tool asks, a service of the app's own. Here the desk is a gate of
 * the test suite's scripted model server (`POST /gates/{name}/pass`, beside OPENAI_BASE_URL's
 * `/v1`): it answers once the test opens the gate, so the tool runs until the test says so.
 */
@Injectable()
export class Desk {
  private readonly base = (process.env.OPENAI_BASE_URL ?? '').replace(/\/v1\/?$/, '');

  async ask(gate: string, callId: string, signal: AbortSignal): Promise<void> {
    const answer = await fetch(`${this.base}/gates/${encodeURIComponent(gate)}/pass`, { method: 'POST', body: callId, signal });
    if (!answer.ok) throw new Error(`the desk answered ${answer.status}`);
  }
}

/** The agent's tools: methods of a provider, so they use the services Nest injects (docs/agents.md). */
@Injectable()
export class FrontDeskTools {
  constructor(@Inject(Desk) private readonly desk: Desk) {}

  @AgentTool({ name: 'hold', description: 'Asks the front desk, and waits until it answers.', parameters: z.object({ gate: z.string().min(1) }) })
  async hold({ gate }: { gate: string }, { callId, signal }: ToolContext): Promise<string> {
    await this.desk.ask(gate, callId, signal);
    return `the front desk answered at ${gate}`;
  }
}

export const frontDesk: AgentDefinition = {
  name: 'front-desk',
  instructions: 'You are the front desk of a hotel. Ask the desk before you answer.',
  tools: [FrontDeskTools],
};

@Module({
  imports: [TurnWorkerModule.forRoot({ agents: [frontDesk, concierge] })],
  providers: [Desk, FrontDeskTools],
})
export class FrontDeskModule {}
