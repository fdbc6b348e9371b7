import { Handoff, OpenAIProvider, type Agent, type AgentOutputType, type FunctionTool, type HandoffInputData, type ModelProvider, type Tool } from '@openai/agents';
import type { DurableTurn } from '@rudder/agent';
import { DurableModel } from './durable-model';
import { outputText } from './items';

/** An agent as a team writes it: its run context and output are its own. */
export type TeamAgent = Agent<unknown, AgentOutputType>;

/**
 * The team's agent as a turn runs it: a copy of it and of every agent its handoffs reach (the
 * agents whose replies are the turn's), each with the turn's durable model around its own model
 * and its function tools through the turn's durable tools. The team's objects are left as they
 * are: an agent used as a tool (`agent.asTool()`) runs inside its tool with its own model and
 * tools, so nothing of its run is the turn's.
 */
export async function durableAgents(root: TeamAgent, durable: DurableTurn, known: Map<string, string>, provider: ModelProvider = new OpenAIProvider()): Promise<TeamAgent> {
  const copies = new Map<TeamAgent, TeamAgent>();
  const copy = async (agent: TeamAgent): Promise<TeamAgent> => {
    const done = copies.get(agent);
    if (done) return done;
    const own = typeof agent.model === 'string' ? await provider.getModel(agent.model === '' ? undefined : agent.model) : agent.model;
    const durableCopy = agent.clone({ model: new DurableModel(own, durable, known), tools: agent.tools.map((t) => durableTool(t, durable, known)) });
    copies.set(agent, durableCopy); // before its handoffs: they may hand back to it
    durableCopy.handoffs = await Promise.all(
      agent.handoffs.map(async (h) =>
        h instanceof Handoff ? h.clone({ agent: await copy(h.agent), ...(h.inputFilter ? { inputFilter: recording(h.inputFilter, known) } : {}) }) : copy(h),
      ),
    );
    return durableCopy;
  };
  return copy(root);
}

/**
 * A function tool whose calls are the turn's durable tool calls: a stored result is given back,
 * a new call runs the tool's own `invoke` (with a person's edited arguments, when they edited
 * them) and is stored. Its `needsApproval` is asked here and handed to Rudder, which parks the
 * call; the framework's own interruption never fires (the copy needs none).
 */
function durableTool(tool: Tool<unknown>, durable: DurableTurn, known: Map<string, string>): Tool<unknown> {
  if (tool.type !== 'function') return tool;
  const own: FunctionTool<unknown> = tool;
  return {
    ...own,
    needsApproval: async () => false,
    invoke: async (runContext, input, details) => {
      const callId = details?.toolCall?.callId;
      if (!callId) throw new Error(`the framework ran ${own.name} without its call`);
      const call = { id: callId, name: own.name, arguments: input };
      const needsApproval = await asksApproval(own, runContext, input, callId);
      const run = async (args: string) => {
        const output = await own.invoke(runContext, args, details);
        // The tool's own error handling may answer an aborted call with a text: a stopped run stores nothing.
        durable.signal.throwIfAborted();
        return asText(output);
      };
      const result = await durable.tool(call, run, { needsApproval });
      known.set(callId, result);
      return result;
    },
  };
}

/** The tool's own approval flag for the call; one that throws asks (a call never runs unapproved by mistake). */
async function asksApproval(tool: FunctionTool<unknown>, runContext: Parameters<FunctionTool['needsApproval']>[0], input: string, callId: string): Promise<boolean> {
  let args: unknown;
  try {
    args = JSON.parse(input);
  } catch {
    return false; // the tool answers arguments it cannot read with its own error, unasked
  }
  try {
    return await tool.needsApproval(runContext, args as never, callId);
  } catch {
    return true;
  }
}

/** A handoff's input filter that first records the outputs the framework made (the handoff's own among them), so a filter that drops one leaves no call unanswered. */
function recording(filter: (data: HandoffInputData) => HandoffInputData, known: Map<string, string>) {
  return (data: HandoffInputData): HandoffInputData => {
    for (const item of data.newItems) if (item.rawItem.type === 'function_call_result') known.set(item.rawItem.callId, outputText(item.rawItem.output));
    return filter(data);
  };
}

const asText = (output: unknown) => (typeof output === 'string' ? output : JSON.stringify(output));
