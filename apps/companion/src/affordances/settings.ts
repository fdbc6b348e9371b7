import type { Config } from '@rudder/runtime';
import { z } from 'zod';

/** How long failures are remembered: the first `firstMs`, each next one at the same position twice the one before, at most `maxMs`. 0 remembers none. */
export type Backoff = { firstMs: number; maxMs: number };

/**
 * How the companion makes follow-up suggestions and recaps (docs/agents.md, "Follow-ups and
 * recap"). Read from the environment beside the shared `Config`: the model is the one the
 * environment names for the agents (OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL) unless
 * AFFORDANCE_MODEL names another on the same server; the prompts are one per deployment.
 */
const Env = z.object({
  /** The model's name for these requests; default OPENAI_MODEL. */
  AFFORDANCE_MODEL: z.string().min(1).optional(),
  /**
   * How long one model request may take before the affordance answers empty (and is not
   * cached). Short: a person is waiting for a page, and a missing suggestion costs nothing.
   */
  AFFORDANCE_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(5000),
  /**
   * How long a failed model request is remembered for the conversation's position (asks of it
   * answer empty meanwhile, asking nothing); each next failure there twice as long, up to
   * AFFORDANCE_BACKOFF_MAX_MS. 0 remembers none: every ask tries again.
   */
  AFFORDANCE_BACKOFF_MS: z.coerce.number().int().min(0).max(600_000).default(5000),
  AFFORDANCE_BACKOFF_MAX_MS: z.coerce.number().int().min(0).max(3_600_000).default(120_000),
  /** Replaces the default instructions of the follow-ups request (the answer's JSON shape is always added after it). */
  FOLLOWUPS_PROMPT: z.string().min(1).optional(),
  /** Replaces the default instructions of the recap request (the answer's JSON shape is always added after it). */
  RECAP_PROMPT: z.string().min(1).optional(),
});

export type AffordanceSettings = {
  /** Where the model is; null when the environment names none (no OPENAI_API_KEY, no OPENAI_BASE_URL): every answer is empty. */
  model: { baseURL?: string; apiKey: string; model: string } | null;
  timeoutMs: number;
  /** How long failed model requests are remembered (`FailureMemory`). */
  backoff: Backoff;
  prompts: { followups: string; recap: string };
  /** The clock the remembered failures are timed by (default `Date.now`): tests pass one they move. */
  now?: () => number;
};

/**
 * The follow-ups request's default instructions. The companion asks for FOLLOWUPS_MAX and
 * serves the first `n`, so one request answers every `n`.
 */
export const DEFAULT_FOLLOWUPS_PROMPT = [
  'You suggest what the user might say next in the conversation below, for buttons under the last answer.',
  "Write up to 5 short messages (at most 12 words each) in the user's own voice, as the user would type them to the assistant:",
  'questions, requests or decisions that move the work forward. Never answer as the assistant, never address the user,',
  'never repeat what was already asked. Write them in the language of the conversation.',
].join(' ');

export const DEFAULT_RECAP_PROMPT = [
  'You write a recap of the conversation below for the person who had it, coming back to it after a while.',
  'Two or three sentences, addressed to them ("You were…"): what they were doing, where it stood, and what was left open or undecided.',
  'No greeting, no advice, nothing that is not in the conversation. Write it in the language of the conversation.',
].join(' ');

/**
 * The answer's shape, always the last paragraph of the system prompt, whatever the prompt is:
 * the companion parses only this, and the scripted model recognises the requests by it
 * (`affordanceAsked` in libs/scripted-model).
 */
export const ANSWER_SHAPE = {
  followups: 'Answer with JSON only, in this shape: {"suggestions": ["<message>", "<message>"]}',
  recap: 'Answer with JSON only, in this shape: {"recap": "<two or three sentences>"}',
} as const;

/** The settings from `env` (default: the process's) and the shared configuration's model. */
export function affordanceSettings(config: Pick<Config, 'OPENAI_BASE_URL' | 'OPENAI_API_KEY' | 'OPENAI_MODEL'>, env: NodeJS.ProcessEnv = process.env): AffordanceSettings {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    throw new Error(`bad configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const { AFFORDANCE_MODEL, AFFORDANCE_TIMEOUT_MS, AFFORDANCE_BACKOFF_MS, AFFORDANCE_BACKOFF_MAX_MS, FOLLOWUPS_PROMPT, RECAP_PROMPT } = parsed.data;
  if (AFFORDANCE_BACKOFF_MAX_MS < AFFORDANCE_BACKOFF_MS) throw new Error('bad configuration: AFFORDANCE_BACKOFF_MAX_MS must be at least AFFORDANCE_BACKOFF_MS');
  const configured = config.OPENAI_API_KEY !== undefined || config.OPENAI_BASE_URL !== undefined;
  return {
    model: configured ? { baseURL: config.OPENAI_BASE_URL, apiKey: config.OPENAI_API_KEY ?? 'none', model: AFFORDANCE_MODEL ?? config.OPENAI_MODEL } : null,
    timeoutMs: AFFORDANCE_TIMEOUT_MS,
    backoff: { firstMs: AFFORDANCE_BACKOFF_MS, maxMs: AFFORDANCE_BACKOFF_MAX_MS },
    prompts: { followups: FOLLOWUPS_PROMPT ?? DEFAULT_FOLLOWUPS_PROMPT, recap: RECAP_PROMPT ?? DEFAULT_RECAP_PROMPT },
  };
}
