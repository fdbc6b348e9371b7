export { durableTurnLoop, langGraphAgent, type InterruptOn, type LangGraphAgentOptions, type RudderSettings } from './langgraph-agent';
export { langGraphGraph, type LangGraphGraphOptions, type MessagesGraph } from './langgraph-graph';
