import { openAiModel, waitTool, type Agent, type ModelClient } from '@rudder/agent';
import type { Config } from '@rudder/runtime';
import type { SteeringPolicy } from './conversation/decisions';

/** An agent as the worker runs it: the loop's agent and how its turns take steered messages. */
export type WorkerAgent = Agent & { steering: SteeringPolicy };

export const defaultAgent = (config: Config): WorkerAgent => ({
  systemPrompt:
    'You are a helpful assistant. The user may add to their request while you work; ' +
    'take their latest messages into account. Use the wait tool when asked to wait.',
  tools: [waitTool],
  maxSteps: 32,
  steering: { maxTaken: config.STEERS_PER_TURN },
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
