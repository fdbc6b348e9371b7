export { adkAgent, adkLoop, type AdkAgentSettings } from './adk-agent';
export { ChatCompletionsLlm, type ChatCompletionsLlmSettings } from './chat-completions-llm';
