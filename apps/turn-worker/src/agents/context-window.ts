import { z } from 'zod';
import { contextBudget, DEFAULT_TOOL_RESULT_TOKENS, type ContextBudget } from '@rudder/agent';
import type { AgentDefinition } from './agent-definition';

/**
 * The tokens a request may carry to well-known OpenAI models (their context windows; the GPT-5
 * family's input limit), by name: the longest prefix of the model's name listed here. Dated
 * names (`gpt-4o-2024-08-06`) and sizes (`gpt-4.1-mini`) match their family.
 */
const CONTEXT_WINDOWS: Record<string, number> = {
  'gpt-3.5-turbo': 16_385,
  'gpt-4': 8_192,
  'gpt-4-32k': 32_768,
  'gpt-4-turbo': 128_000,
  'gpt-4o': 128_000,
  'gpt-4.1': 1_047_576,
  'gpt-5': 272_000,
  o1: 200_000,
  'o1-mini': 128_000,
  o3: 200_000,
  'o4-mini': 200_000,
};

/** The context window of the model named `model`, if it is a well-known one. */
export function knownContextWindow(model: string): number | undefined {
  const prefix = Object.keys(CONTEXT_WINDOWS)
    .filter((name) => model === name || model.startsWith(`${name}-`))
    .sort((a, b) => b.length - a.length)[0];
  return prefix === undefined ? undefined : CONTEXT_WINDOWS[prefix];
}

/**
 * What the environment sets for agents that do not set their own `context`:
 * `MODEL_CONTEXT_TOKENS`, the context window of a model this worker does not know (one of
 * your own client, or any name not in the table above): 128,000 unless set; and
 * `TOOL_RESULT_TOKENS`, the most tokens a tool result is sent with (8,000 unless set).
 */
const ContextEnv = z.object({
  MODEL_CONTEXT_TOKENS: z.coerce.number().int().positive().default(128_000),
  TOOL_RESULT_TOKENS: z.coerce.number().int().positive().default(DEFAULT_TOOL_RESULT_TOKENS),
});
export type ContextEnv = z.infer<typeof ContextEnv>;

export function readContextEnv(env: NodeJS.ProcessEnv = process.env): ContextEnv {
  const parsed = ContextEnv.safeParse(env);
  if (!parsed.success) throw new Error(`bad configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

/** The history is compacted past this share of the budget unless the agent sets its own `compactAt`. */
export const COMPACT_AT_SHARE = 0.75;

/** Room left in the window for the reply when the model's settings give no `maxTokens`. */
export const REPLY_TOKENS = 4096;

/**
 * An agent's budget: its own `context`, else its model's context window (known by name, else
 * `MODEL_CONTEXT_TOKENS`) less the room for its reply (its model's `maxTokens`, else 4,096).
 * `model` is the model's name, unknown for a client of the agent's own.
 */
export function contextOf(definition: AgentDefinition, model: { name?: string; replyTokens?: number }, env: ContextEnv): ContextBudget {
  const own = definition.context ?? {};
  const wrong = (what: string) => new Error(`TurnWorkerModule: agent ${definition.name}: ${what}`);
  const window = (model.name === undefined ? undefined : knownContextWindow(model.name)) ?? env.MODEL_CONTEXT_TOKENS;
  const maxTokens = own.maxTokens ?? window - (model.replyTokens ?? REPLY_TOKENS);
  if (!Number.isInteger(maxTokens) || maxTokens <= 0) {
    throw wrong(own.maxTokens === undefined ? `its model's context window (${window}) leaves no room for a request beside its reply; set context.maxTokens` : 'context.maxTokens must be a whole number of tokens, more than 0');
  }
  const toolResultTokens = own.toolResultTokens ?? env.TOOL_RESULT_TOKENS;
  if (!Number.isInteger(toolResultTokens) || toolResultTokens <= 0) throw wrong('context.toolResultTokens must be a whole number of tokens, more than 0');
  const compactAt = own.compactAt === undefined ? Math.floor(maxTokens * COMPACT_AT_SHARE) : own.compactAt;
  if (compactAt !== null && (!Number.isInteger(compactAt) || compactAt <= 0 || compactAt > maxTokens)) {
    throw wrong(`context.compactAt must be a whole number of tokens, more than 0 and at most context.maxTokens (${maxTokens}), or null`);
  }
  const { summaryPrompt } = own;
  if (summaryPrompt !== undefined && (typeof summaryPrompt !== 'string' || summaryPrompt.trim() === '')) throw wrong('context.summaryPrompt must be a text');
  return contextBudget({ maxTokens, compactAt, toolResultTokens, summaryPrompt });
}
