import { isEventOf, type ConversationEvent, type EventDataOf, type EventType, type ResponseAnswer, type Usage } from '@rudder/contracts';
import { responseIdOf } from './response-id';

/** One event of the protocol's stream, as sent: its `type` and `sequence_number` among its fields. */
export type ProtocolEvent = { type: string; sequence_number: number } & Record<string, unknown>;

type Item = Record<string, unknown> & { type: string; id: string };

/**
 * The event types a response follows: its input accepted, decided as a steer, taken back or
 * dropped, its turn's start, replies, the calls waiting for approval and their decisions, results and end.
 */
const RESPONSE_EVENT_TYPES = [
  'conversation.opened',
  'input.accepted',
  'steer.accepted',
  'input.delivered',
  'turn.started',
  'input.retracted',
  'input.discarded',
  'model.replied',
  'tool.ended',
  'approval.requested',
  'approval.decided',
  'agent.changed',
  'turn.ended',
] as const satisfies readonly EventType[];

/** Where a response is: not seen yet in the log, waiting behind a turn, its turn running, ended. */
type Phase = 'unseen' | 'queued' | 'in_progress' | 'ended';

/** What a response's answer says beside the log: what its create asked for. */
export type ResponseRequest = {
  /** The agent named by the create, until the log says (the conversation's agent). */
  model: string;
  background?: boolean;
  metadata?: Record<string, string>;
  previousResponseId?: string | null;
};

/** How Rudder's turn statuses are told in the protocol (`superseded`: the turn wound down for the next response, keeping its answer). */
const ENDED_AS = {
  completed: 'completed',
  superseded: 'completed',
  stopped: 'cancelled',
  failed: 'failed',
  // The agent's output guard blocked the answer: the response completes with a refusal in its place (`refusal`).
  refused: 'completed',
} as const satisfies Record<EventDataOf<'turn.ended'>['status'], ResponseAnswer['status']>;

/**
 * The steer extension: a create with `metadata: {"rudder.steer": "true"}` on a running response
 * is a steer into it; its response's metadata says whether it landed (`"rudder.landed"`).
 */
export const STEER_KEY = 'rudder.steer';
export const LANDED_KEY = 'rudder.landed';

/** The label of the server-side tool items Rudder's own tools appear as (`mcp_call`). */
export const TOOL_SERVER_LABEL = 'rudder';

/**
 * One response as a fold of its conversation's log: the door's translation of Rudder's events
 * into the protocol's (no state of its own: the same events give the same answer and the same
 * stream, event for event, so a stream replayed from the log has the sequence numbers the live
 * one had).
 *
 * The response is the turn that answers the input `input` (its id is the input's): its
 * `input.accepted` creates it (`queued`), its turn's start puts it `in_progress`, each stored
 * model reply is a `message` item (its text as one delta) and each tool call a server-side
 * `mcp_call` item (the tool is Rudder's to run; the client need not act), and `turn.ended`
 * ends it: `completed` (also when it wound down for the next response: `superseded`),
 * `cancelled` (stopped, or the input retracted before its turn), or `failed`. Events of other
 * inputs and turns are passed over. A steer's response (the steer extension) is created with
 * the worker's decision on it, which its metadata tells, and is the turn that takes it, from
 * the step that takes it (a steer that did not land: the turn it starts).
 */
export class ResponseFold {
  private phase: Phase = 'unseen';
  private turn: string | null = null;
  private sequence = 0;
  /** When its input was accepted (seconds); until the log says, now (a create answered before the worker decided). */
  private createdAt = Math.floor(Date.now() / 1000);
  private completedAt: number | null = null;
  private status: ResponseAnswer['status'] = 'queued';
  private model: string;
  private readonly output: Item[] = [];
  private readonly calls = new Map<string, number>();
  /** The open calls waiting for a person's decision: call id → approval id (its `mcp_approval_request` item's id). */
  private readonly awaiting = new Map<string, string>();
  /** Every approval asked for in this response, and those decided. */
  private readonly requested = new Set<string>();
  private readonly decided = new Set<string>();
  private usage: ResponseAnswer['usage'] = null;
  private metadata: Record<string, string>;
  private error: ResponseAnswer['error'] = null;

  constructor(
    readonly key: string,
    readonly input: string,
    private readonly request: ResponseRequest,
  ) {
    this.model = request.model;
    this.metadata = request.metadata ?? {};
  }

  get id(): string {
    return responseIdOf(this.key, this.input);
  }

  /** The log has said nothing of the input yet. */
  get unseen(): boolean {
    return this.phase === 'unseen';
  }

  get ended(): boolean {
    return this.phase === 'ended';
  }

  /** Accepted, and no turn has it yet. */
  get queued(): boolean {
    return this.phase === 'queued';
  }

  /** The turn that answers it, once one has it. */
  get turnId(): string | null {
    return this.turn;
  }

  /** Whether `approval` is one of the `mcp_approval_request` items of this response. */
  asked(approval: string): boolean {
    return this.requested.has(approval);
  }

  /**
   * Its turn is parked: every call of its last reply without a result waits for a person's
   * decision (nothing will happen until one comes), and `decisions` were seen first: a create
   * answers the response here, `in_progress`, its output holding the `mcp_approval_request` items.
   */
  waitsForApproval(decisions: readonly string[] = []): boolean {
    return this.phase === 'in_progress' && this.awaiting.size > 0 && this.awaiting.size === this.calls.size && decisions.every((d) => this.decided.has(d));
  }

  /** The protocol's events that `event` makes, in order (none for an event of another input or turn). */
  see(event: ConversationEvent): ProtocolEvent[] {
    const out: ProtocolEvent[] = [];
    const emit = (type: string, fields: Record<string, unknown>) => out.push({ type, sequence_number: this.sequence++, ...fields });
    const at = Date.parse(event.at) / 1000;
    // Any other event (a refusal of a control, a step's start, another input kind's events) makes none.
    if (!isEventOf(event, RESPONSE_EVENT_TYPES)) return out;
    switch (event.type) {
      case 'conversation.opened':
        this.model = event.data.agent;
        return out;
      case 'input.accepted':
        if (event.data.input.id !== this.input || this.phase !== 'unseen') return out;
        this.phase = 'queued';
        this.createdAt = Math.floor(at);
        // A steer's response is created with its decision (`steer.accepted`, in the same write), which its metadata tells.
        if (event.data.input.kind === 'chat') emit('response.created', { response: this.answer() });
        return out;
      case 'steer.accepted':
        if (event.data.input.id !== this.input || this.phase !== 'queued') return out;
        this.metadata = { ...this.metadata, [STEER_KEY]: 'true', [LANDED_KEY]: String(event.data.landed) };
        emit('response.created', { response: this.answer() });
        return out;
      case 'input.delivered':
        if (event.data.input.id !== this.input || this.phase !== 'queued') return out;
        this.start(event.data.turn, emit);
        return out;
      case 'turn.started':
        if (event.data.prompt.id !== this.input || this.phase !== 'queued') return out;
        this.start(event.data.turn, emit);
        return out;
      case 'input.retracted':
      case 'input.discarded':
        if (event.data.input.id !== this.input || this.phase !== 'queued') return out;
        this.end('cancelled', at, emit);
        return out;
      case 'model.replied':
        if (event.data.turn !== this.turn || this.phase !== 'in_progress') return out;
        this.reply(event.data, emit);
        return out;
      case 'agent.changed':
        // A handoff in its turn: the agent it was handed to answers the rest of it, and is its model from here on.
        // (A rollback's hand back names a turn it took back: nothing answers the rest of it.)
        if (event.data.turn === this.turn && this.phase === 'in_progress' && event.data.rollback === undefined) this.model = event.data.to;
        return out;
      case 'tool.ended':
        if (event.data.turn !== this.turn || this.phase !== 'in_progress') return out;
        this.toolEnded(event.data, emit);
        return out;
      case 'approval.requested':
        if (event.data.turn !== this.turn || this.phase !== 'in_progress') return out;
        this.approvalRequested(event.data, emit);
        return out;
      case 'approval.decided':
        if (event.data.turn !== this.turn || this.phase !== 'in_progress') return out;
        this.awaiting.delete(event.data.callId);
        this.decided.add(event.data.approval);
        return out;
      case 'turn.ended':
        if (event.data.turn !== this.turn || this.phase !== 'in_progress') return out;
        this.usage = usageOf(event.data.usage);
        if (event.data.status === 'failed') this.error = { code: 'server_error', message: event.data.outcome ?? 'the turn failed' };
        if (event.data.status === 'refused') this.refusal(event.data.outcome ?? event.data.content, emit);
        this.end(ENDED_AS[event.data.status], at, emit);
        return out;
      default: {
        const never: never = event;
        return never;
      }
    }
  }

  /** The response as it stands (the protocol's `Response`). */
  answer(): ResponseAnswer {
    return {
      id: this.id,
      object: 'response',
      created_at: this.createdAt,
      status: this.status,
      model: this.model,
      output: this.output.map((item) => structuredClone(item)),
      error: this.error,
      incomplete_details: null,
      instructions: null,
      metadata: this.metadata,
      parallel_tool_calls: true,
      temperature: null,
      tool_choice: 'auto',
      tools: [],
      top_p: null,
      previous_response_id: this.request.previousResponseId ?? null,
      conversation: { id: this.key },
      background: this.request.background ?? false,
      completed_at: this.completedAt,
      text: { format: { type: 'text' } },
      truncation: 'disabled',
      store: true,
      usage: this.usage,
    };
  }

  private start(turn: string, emit: Emit): void {
    this.turn = turn;
    this.phase = 'in_progress';
    this.status = 'in_progress';
    emit('response.in_progress', { response: this.answer() });
  }

  private reply(reply: EventDataOf<'model.replied'>, emit: Emit): void {
    if (reply.content !== '') {
      const id = `msg_${this.turn}_${reply.step}`;
      const index = this.output.length;
      const item: Item = { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] };
      this.output.push(item);
      emit('response.output_item.added', { output_index: index, item: structuredClone(item) });
      const part = { type: 'output_text', text: '', annotations: [] };
      emit('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part });
      emit('response.output_text.delta', { item_id: id, output_index: index, content_index: 0, delta: reply.content, logprobs: [] });
      emit('response.output_text.done', { item_id: id, output_index: index, content_index: 0, text: reply.content, logprobs: [] });
      const done = { type: 'output_text', text: reply.content, annotations: [] };
      emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: done });
      Object.assign(item, { status: 'completed', content: [done] });
      emit('response.output_item.done', { output_index: index, item: structuredClone(item) });
    }
    for (const call of reply.toolCalls) {
      const index = this.output.length;
      const item: Item = {
        type: 'mcp_call',
        id: `mcp_${call.id}`,
        server_label: TOOL_SERVER_LABEL,
        name: call.name,
        arguments: call.arguments,
        output: null,
        error: null,
        status: 'in_progress',
      };
      this.output.push(item);
      this.calls.set(call.id, index);
      emit('response.output_item.added', { output_index: index, item: structuredClone(item) });
      emit('response.mcp_call.in_progress', { item_id: item.id, output_index: index });
    }
  }

  /**
   * A call that waits for a person's approval: an `mcp_approval_request` item (its id the
   * approval's, which an `mcp_approval_response` names); its `mcp_call` item says which request
   * it waits for (`approval_request_id`) and ends with its result (or denial) as any call's.
   */
  private approvalRequested({ approval, call }: EventDataOf<'approval.requested'>, emit: Emit): void {
    const callIndex = this.calls.get(call.id);
    if (callIndex === undefined) return;
    this.output[callIndex]!.approval_request_id = approval;
    this.awaiting.set(call.id, approval);
    this.requested.add(approval);
    const index = this.output.length;
    const item: Item = { type: 'mcp_approval_request', id: approval, server_label: TOOL_SERVER_LABEL, name: call.name, arguments: call.arguments };
    this.output.push(item);
    emit('response.output_item.added', { output_index: index, item: structuredClone(item) });
    emit('response.output_item.done', { output_index: index, item: structuredClone(item) });
  }

  private toolEnded(result: EventDataOf<'tool.ended'>, emit: Emit): void {
    const index = this.calls.get(result.callId);
    if (index === undefined) return;
    this.calls.delete(result.callId);
    this.awaiting.delete(result.callId);
    const item = this.output[index]!;
    Object.assign(item, result.isError ? { status: 'failed', error: result.result } : { status: 'completed', output: result.result });
    emit(result.isError ? 'response.mcp_call.failed' : 'response.mcp_call.completed', { item_id: item.id, output_index: index });
    emit('response.output_item.done', { output_index: index, item: structuredClone(item) });
  }

  /**
   * The agent's output guard blocked the turn's answer (`{block: message}`): a message whose one
   * content part is a `refusal` with the guard's message, as the protocol tells a model's own
   * refusal. The rejected answer was never a `model.replied`, so nothing of it is in the response.
   */
  private refusal(text: string, emit: Emit): void {
    const id = `msg_${this.turn}_refusal`;
    const index = this.output.length;
    const item: Item = { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] };
    this.output.push(item);
    emit('response.output_item.added', { output_index: index, item: structuredClone(item) });
    emit('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: { type: 'refusal', refusal: '' } });
    emit('response.refusal.delta', { item_id: id, output_index: index, content_index: 0, delta: text });
    emit('response.refusal.done', { item_id: id, output_index: index, content_index: 0, refusal: text });
    const done = { type: 'refusal', refusal: text };
    emit('response.content_part.done', { item_id: id, output_index: index, content_index: 0, part: done });
    Object.assign(item, { status: 'completed', content: [done] });
    emit('response.output_item.done', { output_index: index, item: structuredClone(item) });
  }

  private end(status: ResponseAnswer['status'], at: number, emit: Emit): void {
    // A call cut off by a stop has no result: its item ends incomplete, never left running.
    for (const index of this.calls.values()) {
      const item = this.output[index]!;
      item.status = 'incomplete';
      emit('response.output_item.done', { output_index: index, item: structuredClone(item) });
    }
    this.calls.clear();
    this.awaiting.clear();
    this.phase = 'ended';
    this.status = status;
    this.completedAt = status === 'completed' ? Math.floor(at) : null;
    const terminal = status === 'completed' ? 'response.completed' : status === 'failed' ? 'response.failed' : 'response.incomplete';
    emit(terminal, { response: this.answer() });
  }
}

type Emit = (type: string, fields: Record<string, unknown>) => void;

/** The protocol's usage of a turn's (zeros when the model reported none). */
function usageOf(usage: Usage | undefined): NonNullable<ResponseAnswer['usage']> {
  return {
    input_tokens: usage?.promptTokens ?? 0,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage?.completionTokens ?? 0,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage?.totalTokens ?? 0,
  };
}

/** A protocol event as an SSE message: its type as the event name, no id (the protocol's own `sequence_number` says where it is). */
export const sseOf = (event: ProtocolEvent): string => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
