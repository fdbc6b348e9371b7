import { z } from 'zod';
import { AgentName, ApprovalId, InputId, MessageKind, Subject } from './conversation-key';
import { sha256Hex } from './sha256';

/**
 * Events of a conversation: the worker's event log, published on `agent.events`
 * (key = conversation key) through the transactional outbox. Every event has a unique `id`
 * (consumers deduplicate by it: the relay may publish twice) and a `position`, increasing
 * within a conversation, that SSE uses as its event id.
 */
const Prompt = z.object({ id: InputId, text: z.string() });
const PendingInput = z.object({ id: InputId, kind: MessageKind, text: z.string() });

/**
 * What a refusal keeps of its input's text: its SHA-256 (hex, of the text's UTF-8), enough to
 * tell the same input sent again (same id, same text: the same answer) from another one under
 * the id, and nothing a spammer can grow the log with.
 */
export const inputDigest = (text: string): string => sha256Hex(text);
const RefusedInput = z.object({ id: InputId, kind: MessageKind, digest: z.string().regex(/^[0-9a-f]{64}$/) });
const ToolCall = z.object({ id: z.string(), name: z.string(), arguments: z.string() });
export type ToolCall = z.infer<typeof ToolCall>;

/** Tokens of a model reply as the server counted them; a turn's is the sum over its replies. */
export const Usage = z.object({ promptTokens: z.number().int(), completionTokens: z.number().int(), totalTokens: z.number().int() });
export type Usage = z.infer<typeof Usage>;

/**
 * The agent's plan for a conversation (docs/agents.md, "The plan"): items the model writes
 * through its built-in `todos` tool. `n` is the item's number, stable for the conversation's
 * life and never used again once deleted.
 */
export const TodoStatus = z.enum(['pending', 'in_progress', 'done']);
export type TodoStatus = z.infer<typeof TodoStatus>;
export const TodoItem = z.object({ n: z.number().int().positive(), text: z.string(), status: TodoStatus });
export type TodoItem = z.infer<typeof TodoItem>;

export const TurnStatus = z.enum(['completed', 'stopped', 'failed', 'refused', 'superseded']);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const EventData = {
  /**
   * The conversation's first accepted input opened it: `owner` is the subject that sent it, and
   * `agent` the agent that answers every turn of the conversation from now on (the input's
   * `agent`, else the deployment's default).
   */
  'conversation.opened': z.object({ owner: z.string(), agent: AgentName }),
  /** The worker took an input into the conversation's log; it will be answered exactly once. */
  'input.accepted': z.object({
    input: z.object({
      id: InputId,
      kind: MessageKind,
      text: z.string(),
      messages: z.array(z.string()),
      subject: z.string(),
      sentAt: z.string(),
    }),
    /**
     * A chat's place at acceptance: how many inputs are ahead of it — the follow-ups waiting
     * plus the running turn (0: it starts next). The gateway's 202 answers it as `position`.
     * Absent on steers, and on chats stored before it was recorded.
     */
    ahead: z.number().int().nonnegative().optional(),
  }),
  /**
   * The worker's decision on a steer, made under the conversation's lock so it is serialized
   * with the turn's close: `landed` means `turn` will show it to the model before it ends
   * (unless the turn is stopped, fails or dies first); otherwise it is answered as a turn of
   * its own, in order, and `turn` is null.
   */
  'steer.accepted': z.object({ input: Prompt, turn: z.string().nullable(), landed: z.boolean() }),
  /** The running turn took a steered message at a step: it is in the model's very next request. */
  'steer.taken': z.object({ turn: z.string(), step: z.number().int().nonnegative(), input: Prompt }),
  /** A stop was asked for: the turn (if one runs) ends `stopped` as soon as it can. */
  'stop.requested': z.object({
    stop: InputId,
    turn: z.string().nullable(),
    /**
     * `stop`: the turn ends `stopped` at once. `rollback`: the same, and its work is dropped from
     * the history later turns see. `interrupt`: it ends `superseded` at its next step, keeping
     * what it did. `wind-down` (a graceful stop): its tools see `windDown`, the model is asked
     * once more after its next step, and it ends `completed`. An interrupt winds its tools down
     * too. (Absent in early records: `stop`.)
     */
    mode: z.enum(['stop', 'rollback', 'interrupt', 'wind-down']).default('stop'),
  }),
  /** A pending input was taken back; it is never answered. */
  'input.retracted': z.object({ input: PendingInput, retract: InputId }),
  /** A retraction found nothing to take back: the input was delivered already, or is unknown. */
  'retract.refused': z.object({ retract: InputId, target: InputId.nullable(), code: z.enum(['delivered', 'not_found', 'forbidden']) }),
  /** A stop with discardPending dropped this pending input; it is never answered. */
  'input.discarded': z.object({ input: PendingInput, stop: InputId }),
  /**
   * An input was refused and is answered by this refusal: a queue was full, a precondition failed, or the conversation was busy.
   * Its text is not kept, only its `digest` (`inputDigest`): record version 2. Version 1 kept
   * `input.text`; readers upcast it (`upcastEventData`), so its data always has this shape.
   */
  'input.rejected': z.object({
    input: RefusedInput,
    /**
     * `unknown_agent`: the chat named an agent this deployment does not run; `agent_mismatch`:
     * the conversation has another; `refused`: the agent's input guard refused it (`message` is its reason);
     * `forbidden`: its subject may not write to the conversation (decided in the log, with the input).
     */
    code: z.enum(['queue_full', 'precondition_failed', 'busy', 'unknown_agent', 'agent_mismatch', 'refused', 'forbidden']),
    message: z.string(),
  }),
  /**
   * The agent's input guard failed on a chat or steer — it threw, or ran past its time budget —
   * so nothing was decided: this is no answer to the input, and the same id sent again is
   * guarded again (the gateway answers 503 `guard_failed`, to be retried). `attempt` names the
   * try (one per record guarded), `message` says what failed without the guard's own error.
   */
  'guard.failed': z.object({ input: z.object({ id: InputId, kind: MessageKind }), attempt: z.string(), message: z.string() }),
  /** A promotion found no pending follow-up under that id (delivered, retracted, a steer, or unknown). */
  'promote.refused': z.object({ promote: InputId, target: InputId, code: z.enum(['delivered', 'not_found', 'forbidden']) }),
  /** A stop from a subject that may not write: it stops and discards nothing. */
  'stop.refused': z.object({ stop: InputId, code: z.enum(['forbidden']) }),
  /** The owner gave `subject` read or write access, or took it back (`access: null`). */
  'access.granted': z.object({ grant: InputId, subject: Subject, access: z.enum(['read', 'write']).nullable() }),
  /** A grant from someone other than the owner (`forbidden`), or for a conversation nobody opened yet (`not_found`). */
  // owner: the owner's own access, which always is read and write and never changes.
  'grant.refused': z.object({ grant: InputId, subject: Subject, code: z.enum(['forbidden', 'not_found', 'owner']) }),
  /** The input reached a turn: it started the turn, or the turn took it as a steered message. */
  'input.delivered': z.object({ input: z.object({ id: InputId, kind: MessageKind }), turn: z.string() }),
  /** A turn began, answering `prompt`. */
  'turn.started': z.object({ turn: z.string(), prompt: Prompt }),
  /** The model's reply of one step, stored before any of its tool calls run. */
  'model.replied': z.object({
    turn: z.string(),
    step: z.number().int().nonnegative(),
    content: z.string(),
    toolCalls: z.array(ToolCall),
    usage: Usage.optional(),
    /**
     * What the request this reply answers carried, in tokens as its model counts them (the
     * budget's count times what the model's reported usage taught it), and the agent's budget
     * (`context.maxTokens`). Absent in early records.
     */
    carried: z.object({ tokens: z.number().int().nonnegative(), maxTokens: z.number().int().positive() }).optional(),
  }),
  /**
   * The worker compacted the conversation's history at a step of `turn` (step `step`: before
   * that step's model request): `summary`, made by a model request of its own, stands in for
   * every earlier turn up to and including `through` (the turn, and the position of its
   * `turn.ended`) in the model requests after it — the agent's instructions, the summary, then
   * the turns after `through`, each whole. `turns`: how many turns it covers in all (it
   * summarises the summary before it too); `tokens`: its own tokens. Stored once per `through`;
   * the log, the transcript and the turns keep every turn whole.
   */
  'history.compacted': z.object({
    turn: z.string(),
    step: z.number().int().nonnegative(),
    summary: z.string(),
    through: z.object({ turn: z.string(), position: z.number().int().nonnegative() }),
    turns: z.number().int().positive(),
    tokens: z.number().int().nonnegative(),
  }),
  'tool.started': z.object({ turn: z.string(), step: z.number().int(), call: ToolCall }),
  /**
   * A call of the model's reply needs a person's approval (its tool's `needsApproval`): it is
   * not run until `approval.decided` says so, and the turn parks — no model request, no tool
   * run — while every open call of its step waits for one. `approval` is the worker's id for
   * this call of this step (call ids come from the model and are unique only within a step);
   * `expiresAt` the moment its tool's `approvalTimeout` decides it as denied (null: never).
   */
  'approval.requested': z.object({
    turn: z.string(),
    step: z.number().int().nonnegative(),
    approval: ApprovalId,
    call: ToolCall,
    requestedAt: z.string(),
    expiresAt: z.string().nullable(),
  }),
  /**
   * The call waiting for `approval` was decided: by `subject` through the API (its decision
   * input `input`), or by its timeout (`subject` and `input` null, `reason` says so). An
   * approved call runs — with `arguments` when the person edited them (null: as the model
   * called it); a denied one gets a result saying so, with the reason, and is never run.
   */
  'approval.decided': z.object({
    turn: z.string(),
    step: z.number().int().nonnegative(),
    approval: ApprovalId,
    callId: z.string(),
    tool: z.string(),
    decision: z.enum(['approve', 'deny']),
    reason: z.string().nullable(),
    arguments: z.string().nullable(),
    subject: z.string().nullable(),
    input: InputId.nullable(),
  }),
  /**
   * A decision input decided nothing: its subject may not write (`forbidden`), no call waits
   * under that approval (`not_awaiting`: decided before, closed by the turn's end, or unknown),
   * or the tool's schema refused its edited arguments (`invalid_arguments`, `message` says why).
   */
  'approval.refused': z.object({
    input: InputId,
    approval: ApprovalId,
    code: z.enum(['forbidden', 'not_awaiting', 'invalid_arguments']),
    message: z.string(),
  }),
  /** A tool call's result, stored once: a resumed turn never runs it again. */
  'tool.ended': z.object({
    turn: z.string(),
    step: z.number().int(),
    callId: z.string(),
    name: z.string(),
    result: z.string(),
    isError: z.boolean(),
  }),
  /**
   * The plan changed: `items` is the whole list now, `next` the number the next new item gets
   * (past every number ever used). A call of the `todos` tool changed it (`callId`, stored with
   * the call's result, in one commit), or a rolled-back turn's changes were undone with it
   * (`callId` null, stored with its end).
   */
  'todos.updated': z.object({
    turn: z.string(),
    step: z.number().int().nonnegative(),
    callId: z.string().nullable(),
    items: z.array(TodoItem),
    next: z.number().int().positive(),
  }),
  /** The turn ended. `content` holds every answer of the turn, in order; `outcome` says why when not completed. */
  'turn.ended': z.object({
    turn: z.string(),
    status: TurnStatus,
    outcome: z.string().nullable(),
    content: z.string(),
    steered: z.array(Prompt),
    /** The sum of the turn's replies' usage (absent in early records). */
    usage: Usage.optional(),
    /** It was asked to wind down (an interrupt, a graceful stop) and ended at its next step: its tools saw `windDown`. Absent: false. */
    woundDown: z.boolean().optional(),
  }),
} as const;

export type EventType = keyof typeof EventData;
export type EventDataOf<T extends EventType> = z.infer<(typeof EventData)[T]>;

/** An event as the domain makes it: type and data only; the store gives id, position and time. */
export type DomainEvent = { [T in EventType]: { type: T; data: EventDataOf<T> } }[EventType];
