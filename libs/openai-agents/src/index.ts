export { openAiAgentsAgent, openAiAgentsLoop, type OpenAiAgentsAgentOptions, type OpenAiAgentsLoopOptions } from './openai-agents-agent';
export { DurableModel } from './durable-model';
