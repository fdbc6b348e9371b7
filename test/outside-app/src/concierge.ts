import { createOpenAI } from '@ai-sdk/openai';
import { aiSdkAgent } from '@rudder/ai-sdk';
import { stepCountIs, tool, ToolLoopAgent } from 'ai';
import { z } from 'zod';

/**
 * A second agent of the app, written with Vercel's AI SDK as its team had it before Rudder (a
 * `ToolLoopAgent`, unchanged) and registered through `@rudder/ai-sdk` (docs/frameworks.md). Its
 * `hold` tool asks the same front desk (a gate of the suite's scripted model server, see
 * front-desk.ts), so it runs until the test lets it go.
 */
const base = (process.env.OPENAI_BASE_URL ?? '').replace(/\/v1\/?$/, '');
const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });

export const conciergeAgent = new ToolLoopAgent({
  model: openai.chat(process.env.OPENAI_MODEL ?? 'gpt-4o-mini'),
  instructions: 'You are the concierge of a hotel. Ask the desk before you answer.',
  tools: {
    hold: tool({
      description: 'Asks the front desk, and waits until it answers.',
      inputSchema: z.object({ gate: z.string().min(1) }),
      execute: async ({ gate }, { toolCallId, abortSignal }) => {
        const answer = await fetch(`${base}/gates/${encodeURIComponent(gate)}/pass`, { method: 'POST', body: toolCallId, signal: abortSignal });
        if (!answer.ok) throw new Error(`the desk answered ${answer.status}`);
        return `the front desk answered at ${gate}`;
      },
    }),
  },
  stopWhen: stepCountIs(8),
});

export const concierge = aiSdkAgent({ name: 'concierge', agent: conciergeAgent });
