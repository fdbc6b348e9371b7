import {
  BaseLlm,
  BasePlugin,
  createEvent,
  InMemorySessionService,
  isBaseLlm,
  isFunctionTool,
  LLMRegistry,
  Runner,
  StreamingMode,
  ToolConfirmation,
  type BaseLlmConnection,
  type BaseTool,
  type Context,
  type LlmAgent,
  type LlmRequest,
  type LlmResponse,
} from '@google/adk';
import type { Content } from '@google/genai';
import { DurableTurn, TurnOver, TurnParked, type ModelMessage, type Steer, type TurnLoop } from '@rudder/agent';
import type { AgentDefinition } from '@rudder/turn-worker';
import { inputContents, llmResponse, modelReply, toolResponse, toolText } from './contents';

/** Rudder's own settings of an agent; its instructions, model and tools are the ADK agent's. */
export type AdkAgentSettings = Pick<AgentDefinition, 'steering' | 'bounds' | 'guard' | 'guardTimeoutMs' | 'history' | 'maxSteps' | 'affordances' | 'context'>;

/**
 * An agent written with ADK (an `LlmAgent`, with its tools, sub-agents and agents as tools) as
 * a Rudder agent: list it in `TurnWorkerModule.forRoot({ agents: [...] })`.
 */
export function adkAgent({ name, agent, ...settings }: { name: string; agent: LlmAgent } & AdkAgentSettings): AgentDefinition {
  return { ...settings, name, instructions: '', loop: adkLoop(agent) };
}

/**
 * The turn loop of an ADK agent: each run of the turn is one ADK run (a `Runner` on an
 * in-memory session made from the turn's input: Rudder's log is the conversation's record,
 * not ADK's session), whose top-level model requests and tool calls go through a
 * `DurableTurn`.
 */
export function adkLoop(agent: LlmAgent): TurnLoop {
  durableModelOf(agent);
  // ADK's spans go to whatever tracer provider the process registered (Rudder's, when tracing is
  // on); they carry no conversation text unless the team asks for it.
  process.env.ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS ??= 'false';
  return (options) => {
    const durable = new DurableTurn(options);
    return durable.run((input) => runAdk(agent, durable, input, options.conversation));
  };
}

const APP = 'rudder';
/** ADK's tool that hands the conversation to a sub-agent. */
const TRANSFER = 'transfer_to_agent';

async function runAdk(agent: LlmAgent, durable: DurableTurn, input: ModelMessage[], conversation: string): Promise<void> {
  const contents = inputContents(input, agent.name);
  const prompt = contents.pop();
  if (prompt?.author !== 'user') throw new Error('the turn has no user message to answer');
  const sessionService = new InMemorySessionService();
  const session = await sessionService.createSession({ appName: APP, userId: conversation });
  for (const { author, content } of contents) await sessionService.appendEvent({ session, event: createEvent({ invocationId: 'rudder-history', author, content }) });
  const runner = new Runner({ appName: APP, agent, sessionService, plugins: [new DurablePlugin(agent, durable)] });
  let failure: Error | undefined;
  for await (const event of runner.runAsync({
    userId: conversation,
    sessionId: session.id,
    newMessage: prompt.content,
    abortSignal: durable.signal,
    // The model streams, so its tokens reach Rudder's stream as they come.
    runConfig: { streamingMode: StreamingMode.SSE },
  })) {
    // ADK answers a failed model request (and a tool callback that threw) with an error event and ends its run.
    if (event.errorCode) failure ??= new Error(`${event.errorCode}: ${event.errorMessage ?? ''}`);
  }
  durable.signal.throwIfAborted();
  if (failure) throw failure;
}

/** The model requests each run hands to the durable model: the top-level agent's, marked by the run's plugin. */
const durableRequests = new WeakMap<LlmRequest, DurableTurn>();

/**
 * The agent's model, wrapped once: a request its run's plugin marked is the turn's next step
 * (`durable.model`: replayed from the log, or asked of the agent's own model with the step's
 * steers); any other — a sub-agent that inherits the model — goes to the model as it is.
 */
function durableModelOf(agent: LlmAgent): void {
  if (agent.model instanceof DurableLlm) return;
  const own = isBaseLlm(agent.model) ? agent.model : typeof agent.model === 'string' && agent.model ? LLMRegistry.newLlm(agent.model) : undefined;
  if (!own) throw new Error(`the ADK agent ${agent.name} has no model of its own: give it one (ChatCompletionsLlm, say)`);
  agent.model = new DurableLlm(own);
}

class DurableLlm extends BaseLlm {
  constructor(private readonly own: BaseLlm) {
    super({ model: own.model });
  }

  async *generateContentAsync(request: LlmRequest, stream?: boolean, abortSignal?: AbortSignal): AsyncGenerator<LlmResponse, void> {
    const durable = durableRequests.get(request);
    if (!durable) {
      yield* this.own.generateContentAsync(request, stream, abortSignal);
      return;
    }
    const reply = await durable.model(async ({ steers, signal, onToken }) => {
      let whole: LlmResponse | undefined;
      for await (const response of this.own.generateContentAsync({ ...request, contents: withSteers(request.contents, steers) }, stream, signal)) {
        if (!response.partial) whole = response;
        else for (const part of response.content?.parts ?? []) if (part.text && !part.thought) onToken(part.text);
      }
      if (!whole) throw new Error('the model answered nothing');
      return modelReply(whole);
    }, resultsOf(request.contents));
    yield llmResponse(reply);
  }

  connect(request: LlmRequest): Promise<BaseLlmConnection> {
    return this.own.connect(request);
  }
}

/** The request's contents with each steer as a user `Content` right after the function responses of its calls; left out when the request holds none of them. */
function withSteers(contents: Content[], steers: readonly Steer[]): Content[] {
  const out = [...contents];
  for (const steer of steers) {
    const at = out.findLastIndex((c) => c.parts?.some((p) => p.functionResponse?.id !== undefined && steer.afterCalls.includes(p.functionResponse.id)));
    if (at !== -1) out.splice(at + 1, 0, { role: 'user', parts: [{ text: steer.text }] });
  }
  return out;
}

/** The function responses a request holds, by call id, as Rudder stores results. */
function resultsOf(contents: Content[]): Map<string, string> {
  return new Map(contents.flatMap((c) => (c.parts ?? []).flatMap((p) => (p.functionResponse?.id ? [[p.functionResponse.id, toolText(p.functionResponse.response ?? {})] as const] : []))));
}

/**
 * One run's hooks into ADK, for the top-level agent only (a sub-agent's requests and calls, and
 * an agent used as a tool — which runs on a runner of its own, without this plugin — are not
 * the turn's steps): it marks each model request for the durable model, and runs each tool
 * call through `durable.tool` — a stored result skips the tool; a call whose `FunctionTool`
 * requires confirmation is parked as Rudder's approval instead of ADK's confirmation.
 */
class DurablePlugin extends BasePlugin {
  constructor(
    private readonly agent: LlmAgent,
    private readonly durable: DurableTurn,
  ) {
    super('rudder-durable-turn');
  }

  override async beforeModelCallback({ callbackContext, llmRequest }: { callbackContext: Context; llmRequest: LlmRequest }): Promise<LlmResponse | undefined> {
    if (callbackContext.agentName === this.agent.name) durableRequests.set(llmRequest, this.durable);
    return undefined;
  }

  override async beforeToolCallback({ tool, toolArgs, toolContext }: { tool: BaseTool; toolArgs: Record<string, unknown>; toolContext: Context }): Promise<Record<string, unknown> | undefined> {
    const id = toolContext.functionCallId;
    if (toolContext.agentName !== this.agent.name || !id) return undefined;
    const needsApproval = isFunctionTool(tool) ? await tool.checkRequireConfirmation(toolArgs, toolContext) : false;
    const run = async (args: string) => {
      const given = JSON.parse(args) as Record<string, unknown>;
      // Rudder approved the call (the person may have edited its arguments): ADK's own confirmation must not ask again.
      if (needsApproval) toolContext.toolConfirmation = new ToolConfirmation({ confirmed: true });
      for (const callback of this.agent.canonicalBeforeToolCallbacks) {
        const answered = await callback({ tool, args: given, context: toolContext });
        if (answered) return toolText(answered);
      }
      return toolText(response(await tool.runAsync({ args: given, toolContext })));
    };
    const result = this.durable.tool({ id, name: tool.name, arguments: JSON.stringify(toolArgs) }, run, { needsApproval });
    const approval = this.durable.turn.approvals[id];
    if (approval ? approval.status === 'awaiting' : needsApproval) {
      // ADK runs a reply's calls one after another: the others run while this one waits, and the
      // step parks (aborting the run) once they are done.
      result.catch(() => undefined);
      return { result: 'waiting for approval' };
    }
    try {
      const text = await result;
      // A transfer's effect is an action on the context, which a stored result does not carry: replayed, it hands over again.
      if (tool.name === TRANSFER && typeof toolArgs.agentName === 'string') toolContext.actions.transferToAgent = toolArgs.agentName;
      return toolResponse(text);
    } catch (error) {
      if (error instanceof TurnOver || error instanceof TurnParked || this.durable.signal.aborted) return { result: 'not run: the turn is over' };
      return { error: error instanceof Error ? error.message : String(error) };
    }
  }
}

/** A tool's return value as ADK makes it a function response. */
function response(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return { result: value };
  if (Array.isArray(value)) return { results: value };
  return value as Record<string, unknown>;
}
