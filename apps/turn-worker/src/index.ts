export { AgentTool, type AgentToolOptions } from './agents/agent-tool.decorator';
export type { AgentDefinition, GuardInput, GuardVerdict, ModelSettings } from './agents/agent-definition';
export { defaultAgent } from './agents/default-agent';
export { MCP_META, type McpServerDefinition } from './agents/mcp/mcp-tools';
export { turnWorkerTransport } from './transport';
export { TurnWorkerModule, type TurnWorkerAsyncOptions } from './turn-worker.module';
export type { TurnWorkerOptions } from './turn-worker.options';
export { startTurnWorker, type RunningTurnWorker } from './start-turn-worker';
export { defineTool, waitTool, type ModelClient, type OutputGuardContext, type OutputVerdict, type Tool, type ToolContext } from '@rudder/agent';
