export { aiSdkAgent, type AiSdkAgentSettings, type RudderSettings } from './ai-sdk-agent';
export { durableModel, withSteers } from './durable-model';
export { durableTools } from './durable-tools';
