export { affordanceAsked, affordanceReply, affordanceTranscript, type Affordance } from './affordances';
export { createGates, type Gate, type GateState } from './gates';
export { promptTokens } from './prompt-tokens';
export { toolSequenceProblem } from './request';
export { startScriptedModel, SCRIPTED_MODEL_ID, type ScriptedModel, type ScriptedModelOptions } from './server';
export {
  lastMessage,
  lastUserText,
  messageText,
  offersTool,
  reply,
  toolNameOf,
  toolResults,
  userTexts,
  type ChatCompletionCreateBody,
  type ChatMessage,
  type ModelRequest,
  type Script,
  type ScriptedReply,
  type ToolCallReply,
} from './script';
export { demoScript, requestedWaitMs, DEFAULT_WAIT_MS, MAX_WAIT_MS } from './demo-script';
