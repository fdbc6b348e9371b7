export { openAiAgentsAgent, openAiAgentsLoop, type OpenAiAgentsAgentOptions, type OpenAiAgentsLoopOptions } from './openai-agents-agent';
