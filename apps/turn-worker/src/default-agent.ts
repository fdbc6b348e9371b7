import { openAiModel, waitTool, type Agent, type ModelClient } from '@rudder/agent';
import type { Config } from '@rudder/runtime';
import type { InputPolicy } from './conversation/decisions';

/** An agent as the worker runs it: the loop's agent, how its turns take steered messages and what may wait. */
export type WorkerAgent = Agent & { inputs: InputPolicy };

export const defaultAgent = (config: Config): WorkerAgent => ({
  systemPrompt:
    'You are a helpful assistant. The user may add to their request while you work; ' +
    'take their latest messages into account. Use the wait tool when asked to wait.',
  tools: [waitTool],
  maxSteps: 32,
  inputs: {
    maxTaken: config.STEERS_PER_TURN,
    bounds: { steers: config.MAX_PENDING_STEERS, chats: config.MAX_PENDING_CHATS, chars: config.MAX_PENDING_CHARS },
  },
});

/** The model from the environment: OpenAI, or any compatible server at OPENAI_BASE_URL. */
export function modelFromConfig(config: Config): ModelClient {
  if (!config.OPENAI_API_KEY && !config.OPENAI_BASE_URL) {
    throw new Error('set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) — or use `npm start`, which runs the offline demo model');
  }
  return openAiModel({
    baseURL: config.OPENAI_BASE_URL,
    apiKey: config.OPENAI_API_KEY ?? 'none',
    model: config.OPENAI_MODEL,
  });
}
