import { z } from 'zod';
import { droppedKeys, keysOutsideSchema } from './unknown-keys';

/**
 * What a tool call knows of where it runs. `callId` is the same on every run of this call (a
 * call whose result was not stored before a crash runs again, on this worker or another), so
 * it is the idempotency key for the call's side effects: a tool runs at least once until its
 * result is stored, and never after.
 */
export type ToolContext = {
  conversation: string;
  turn: string;
  callId: string;
  /** Who sent the turn's prompt. */
  subject: string;
  /** Aborts when the turn is stopped or the worker lets go of the conversation: stop promptly. */
  signal: AbortSignal;
  /**
   * Raised when the conversation asks the running turn to finish early (a chat with `onBusy:
   * "interrupt"`, a stop with `graceful: true`): a long tool may return what it has so far (say
   * so in its result); the turn ends at its next step, keeping it. Unlike `signal`, it never
   * cancels the call: a tool that ignores it just finishes.
   */
  windDown: AbortSignal;
  /** How many newer inputs wait behind the turn right now (read it when you need it: it changes). */
  readonly pending: number;
  /** Whether the turn started from the queue: its input waited behind a running turn. */
  queued: boolean;
};

/**
 * A tool the model may call. `parameters` validates the model's arguments (zod at the edge);
 * `run` answers a text for the model and must stop promptly when `signal` aborts.
 */
export type Tool = {
  name: string;
  description: string;
  parameters: z.ZodType;
  /**
   * A result is sent to the model with at most this many tokens (truncated, with a marker
   * saying so); the stored result stays whole. Default: its agent's `context.toolResultTokens`.
   */
  maxResultTokens?: number;
  /**
   * The JSON schema the model sees, when it is not made from `parameters`: a tool of an MCP
   * server is described by the server's own schema, and the server validates its arguments.
   */
  inputSchema?: Record<string, unknown>;
  /**
   * A call needs a person's approval before it runs (docs/agents.md, "Approvals"): `true`, or a
   * function of its arguments (as `parameters` parsed them) and context — a payment over 100,
   * say. A function that throws asks for approval. Absent: never.
   */
  needsApproval?: boolean | ((args: unknown, context: ToolContext) => boolean | Promise<boolean>);
  /** How long a call waits for approval before it is decided as denied ("timed out"), in milliseconds. Absent: it waits until decided. */
  approvalTimeout?: number;
  run(args: unknown, context: ToolContext): Promise<string>;
};

export function defineTool<S extends z.ZodType>(tool: {
  name: string;
  description: string;
  parameters: S;
  maxResultTokens?: number;
  needsApproval?: boolean | ((args: z.infer<S>, context: ToolContext) => boolean | Promise<boolean>);
  approvalTimeout?: number;
  run(args: z.infer<S>, context: ToolContext): Promise<string>;
}): Tool {
  const { needsApproval } = tool;
  return {
    ...tool,
    needsApproval: typeof needsApproval === 'function' ? (args, context) => needsApproval(tool.parameters.parse(args), context) : needsApproval,
    run: (args, context) => tool.run(tool.parameters.parse(args), context),
  };
}

/**
 * Whether this call of a tool waits for a person's approval (`Tool.needsApproval`). A call the
 * tool could not run anyway — unknown tool, arguments that are not JSON or that its schema
 * refuses — is not asked about: it is answered with its error at once. A function that throws
 * asks (never runs unapproved by mistake).
 */
export async function needsApproval(tools: readonly Tool[], call: { name: string; arguments: string }, context: ToolContext): Promise<boolean> {
  const tool = tools.find((t) => t.name === call.name);
  if (!tool?.needsApproval) return false;
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return false;
  }
  if (!tool.inputSchema && !tool.parameters.safeParse(args).success) return false;
  if (tool.needsApproval === true) return true;
  try {
    return await tool.needsApproval(args, context);
  } catch {
    return true;
  }
}

/**
 * Why a person's edited arguments for a call of `tool` are refused (not JSON, not an object, its
 * schema refuses them, or they have keys it does not know); null when they are fine. An unknown
 * key is refused because the model would read the edited arguments with it while the tool never
 * got it: a zod object drops it (`droppedKeys`, at any depth). A tool described by its server's
 * own schema (an MCP tool) gets its arguments as given and is checked by its server when it
 * runs: here as JSON of an object without the keys its schema refuses by
 * `additionalProperties: false` (`keysOutsideSchema`).
 */
export function argumentsError(tool: Tool, text: string): string | null {
  let args: unknown;
  try {
    args = JSON.parse(text);
  } catch {
    return 'the arguments are not JSON';
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return 'the arguments are not a JSON object';
  if (tool.inputSchema) return unknownKeysError(keysOutsideSchema(tool.inputSchema, args));
  const parsed = tool.parameters.safeParse(args);
  if (parsed.success) return unknownKeysError(droppedKeys(args, parsed.data));
  // Stored with the refusal (`approval.refused`): bounded, whatever the arguments.
  const why = z.prettifyError(parsed.error);
  return why.length <= ARGUMENTS_ERROR_CHARS ? why : `${why.slice(0, ARGUMENTS_ERROR_CHARS)}… (${parsed.error.issues.length} issues)`;
}

/** The refusal of the unknown keys at `paths`, bounded like a schema's; null for none. */
function unknownKeysError(paths: readonly string[]): string | null {
  if (paths.length === 0) return null;
  const why = `the tool takes no ${paths.length === 1 ? 'key' : 'keys'} ${paths.map((p) => JSON.stringify(p)).join(', ')}`;
  return why.length <= ARGUMENTS_ERROR_CHARS ? why : `${why.slice(0, ARGUMENTS_ERROR_CHARS)}… (${paths.length} keys)`;
}

/** How much of a schema's refusal of edited arguments is kept. */
const ARGUMENTS_ERROR_CHARS = 1000;

export type ToolSpec = {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
};

/** Each tool's spec, made once: converting its schema took 2 % of a worker's CPU when made for every model request. */
const specs = new WeakMap<Tool, ToolSpec>();

/** The tool as the Chat Completions API describes it. */
export function toolSpec(tool: Tool): ToolSpec {
  let spec = specs.get(tool);
  if (!spec) {
    spec = {
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema ?? (z.toJSONSchema(tool.parameters) as Record<string, unknown>) },
    };
    specs.set(tool, spec);
  }
  return spec;
}

/**
 * Waits `ms` milliseconds, abortably. The demo and the tests use it to hold a step open. Asked
 * to wind down, it stops waiting and says how long it waited.
 */
export const waitTool = defineTool({
  name: 'wait',
  description: 'Waits the given number of milliseconds, then answers how long it waited.',
  parameters: z.object({ ms: z.number().int().min(0).max(600_000) }),
  run: ({ ms }, { signal, windDown }) =>
    new Promise<string>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const started = Date.now();
      const done = (answer: () => void) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        windDown.removeEventListener('abort', onWindDown);
        answer();
      };
      const timer = setTimeout(() => done(() => resolve(`waited ${ms} ms`)), ms);
      const onAbort = () => done(() => reject(signal.reason));
      const onWindDown = () => done(() => resolve(`waited ${Math.min(ms, Date.now() - started)} ms of ${ms}, then wound down`));
      signal.addEventListener('abort', onAbort, { once: true });
      if (windDown.aborted) onWindDown();
      else windDown.addEventListener('abort', onWindDown, { once: true });
    }),
});

export type ToolResult = { result: string; isError: boolean };

/**
 * Runs one call. A call the model got wrong (unknown tool, arguments that don't parse or
 * validate, a tool that throws) is answered with an error text the model can read; only an
 * abort propagates, so an aborted call is never stored as a result.
 */
export async function runToolCall(
  tools: readonly Tool[],
  call: { name: string; arguments: string },
  context: ToolContext,
): Promise<ToolResult> {
  const { signal } = context;
  const tool = tools.find((t) => t.name === call.name);
  if (!tool) return { result: `error: there is no tool named "${call.name}"`, isError: true };
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch {
    return { result: `error: the arguments are not JSON: ${call.arguments.slice(0, 200)}`, isError: true };
  }
  try {
    return { result: await tool.run(args, context), isError: false };
  } catch (error) {
    if (signal.aborted) throw error;
    if (error instanceof z.ZodError) {
      return { result: `error: invalid arguments: ${z.prettifyError(error)}`, isError: true };
    }
    return { result: `error: ${error instanceof Error ? error.message : String(error)}`, isError: true };
  }
}
