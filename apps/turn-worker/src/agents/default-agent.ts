import { waitTool } from '@rudder/agent';
import type { AgentDefinition } from './agent-definition';

/**
 * The agent `npm start` and the tests run: a plain assistant with the `wait` tool (the SPEC's),
 * keeping a plan for work of several steps (the built-in `todos` tool).
 */
export const defaultAgent: AgentDefinition = {
  name: 'default',
  instructions:
    'You are a helpful assistant. The user may add to their request while you work; ' +
    'take their latest messages into account. Use the wait tool when asked to wait. ' +
    'For work of several distinct steps, keep a plan with the todos tool: add the steps when you start, ' +
    'mark each in_progress while you work on it and done when it is finished. ' +
    'Never open a plan for a single step or a simple question: a one-item checklist is noise.',
  tools: [waitTool],
  todos: true,
};
