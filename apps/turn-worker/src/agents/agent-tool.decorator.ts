import { SetMetadata } from '@nestjs/common';
import type { z } from 'zod';
import type { ToolContext } from '@rudder/agent';

export const AGENT_TOOL = 'rudder:agent-tool';

export type AgentToolOptions<S extends z.ZodType> = {
  name: string;
  description: string;
  /** Validates the model's arguments; the JSON schema the model sees is made from it. */
  parameters: S;
  /** Its results are sent to the model with at most this many tokens (truncated, with a marker); default: the agent's `context.toolResultTokens`. */
  maxResultTokens?: number;
  /**
   * A call waits for a person's approval before it runs (docs/agents.md, "Approvals"): `true`,
   * or a function of its (parsed) arguments and context — approve payments over 100 only, say.
   */
  needsApproval?: boolean | ((args: z.infer<S>, context: ToolContext) => boolean | Promise<boolean>);
  /** Milliseconds a call waits for approval before it is denied as timed out; absent: until decided. */
  approvalTimeout?: number;
};

/**
 * Marks a method of a provider as a tool: `(args, context) => Promise<string>`, where `args`
 * passed `parameters` and `context` has the conversation, the turn, the subject, an abort
 * signal and a `callId` that is the same on every run of this call — a tool runs at least once
 * until its result is stored and never after, so use `callId` to make side effects exactly once.
 */
export const AgentTool = <S extends z.ZodType>(options: AgentToolOptions<S>) =>
  SetMetadata(AGENT_TOOL, options) as <T extends (args: z.infer<S>, context: ToolContext) => Promise<string>>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ) => void;
