import { waitTool } from '@rudder/agent';
import type { AgentDefinition } from './agent-definition';

/** The agent `npm start` and the tests run: a plain assistant with the `wait` tool (the SPEC's). */
export const defaultAgent: AgentDefinition = {
  name: 'default',
  instructions:
    'You are a helpful assistant. The user may add to their request while you work; ' +
    'take their latest messages into account. Use the wait tool when asked to wait.',
  tools: [waitTool],
};
