import { asSchema, type ToolExecutionOptions, type ToolSet } from 'ai';
import type { DurableTurn } from '@rudder/agent';

/**
 * The agent's tools made durable (`DurableTurn.tool`): a call whose result is stored answers it
 * again, never running; a new call runs the tool's own `execute` and its result is stored. What
 * the AI SDK gets is the stored text either way (an object result as its JSON, which is what the
 * model is sent), so a resumed run's requests are the first run's. A tool's `needsApproval` is
 * read here and parks the turn as Rudder's approvals do; the AI SDK's own approval flow never
 * starts. A call approved with edited arguments runs with them, checked by the tool's schema.
 */
export function durableTools(tools: ToolSet, durable: DurableTurn): ToolSet {
  return Object.fromEntries(
    Object.entries(tools).map(([name, tool]) => {
      const { execute } = tool;
      if (!execute) return [name, tool];
      return [
        name,
        {
          ...tool,
          needsApproval: undefined,
          execute: async (input: unknown, options: ToolExecutionOptions) => {
            const needsApproval = typeof tool.needsApproval === 'function' ? await tool.needsApproval(input, options) : (tool.needsApproval ?? false);
            const call = { id: options.toolCallId, name, arguments: JSON.stringify(input) };
            return durable.tool(
              call,
              async (args) => {
                const given = args === call.arguments ? input : await edited(tool.inputSchema, args);
                const output: unknown = await execute(given, { ...options, abortSignal: durable.signal });
                return typeof output === 'string' ? output : JSON.stringify(output);
              },
              { needsApproval },
            );
          },
        },
      ];
    }),
  );
}

/** A person's edited arguments, as the tool's schema reads them; a refusal says why. */
async function edited(schema: ToolSet[string]['inputSchema'], args: string): Promise<unknown> {
  const parsed: unknown = JSON.parse(args);
  const validate = asSchema(schema).validate;
  if (!validate) return parsed;
  const result = await validate(parsed);
  if (!result.success) throw new Error(`the edited arguments do not fit the tool: ${result.error.message}`);
  return result.value;
}
