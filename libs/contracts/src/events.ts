import { z } from 'zod';
import { AgentName, ApprovalId, InputId, MessageKind } from './conversation-key';
import { Digest, eventContract, joinEventContracts, NAMES_NONE, namesAbout, namesAboutAndAnswers, namesAnswers, Prompt, type EventContract } from './event-parts';
import { KIND_EVENT_CONTRACTS, KIND_OF_EVENT, type KindEventContracts, type KindEventType } from './inputs';

export { inputDigest } from './event-parts';

/**
 * Events of a conversation: the worker's event log, published on `agent.events`
 * (key = conversation key) through the transactional outbox. Every event has a unique `id`
 * (consumers deduplicate by it: the relay may publish twice) and a `position`, increasing
 * within a conversation, that SSE uses as its event id.
 *
 * Each event type is declared once, with the input ids it names (`EventContract`): the
 * conversation's and the turn's own here — the messages' (chats and steers: accepted, refused,
 * decided, taken, delivered) and the turn's steps — and an input kind's in its module
 * (`inputs/<kind>.ts`: the events only its decisions make, such as a retraction's).
 */
const RefusedInput = z.object({ id: InputId, kind: MessageKind, digest: Digest });
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

/** The conversation's and the turn's own events: what no one input kind declares. */
const CORE_EVENT_CONTRACTS = {
  /**
   * The conversation's first accepted input opened it: `owner` is the subject that sent it, and
   * `agent` the agent that answers its turns from now on (the input's `agent`, else the
   * deployment's default) until a handoff hands it to another (`agent.changed`).
   */
  'conversation.opened': eventContract(z.object({ owner: z.string(), agent: AgentName }), () => NAMES_NONE),
  /** The worker took an input into the conversation's log; it will be answered exactly once. */
  'input.accepted': eventContract(
    z.object({
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
    (data) => namesAboutAndAnswers(data.input.id),
  ),
  /**
   * The worker's decision on a steer, made under the conversation's lock so it is serialized
   * with the turn's close: `landed` means `turn` will show it to the model before it ends
   * (unless the turn is stopped, fails or dies first); otherwise it is answered as a turn of
   * its own, in order, and `turn` is null.
   */
  'steer.accepted': eventContract(
    z.object({ input: Prompt, turn: z.string().nullable(), landed: z.boolean() }),
    // A steer's decision, or a promoted follow-up's (the promotion's answer names its target).
    (data) => namesAboutAndAnswers(data.input.id),
  ),
  /** The running turn took a steered message at a step: it is in the model's very next request. */
  'steer.taken': eventContract(
    z.object({ turn: z.string(), step: z.number().int().nonnegative(), input: Prompt }),
    (data) => namesAbout(data.input.id),
  ),
  /**
   * An input was refused and is answered by this refusal: a queue was full, a precondition failed, or the conversation was busy.
   * Its text is not kept, only its `digest` (`inputDigest`): record version 2. Version 1 kept
   * `input.text`; readers upcast it (`upcastEventData`), so its data always has this shape.
   */
  'input.rejected': eventContract(
    z.object({
      input: RefusedInput,
      /**
       * `unknown_agent`: the chat named an agent this deployment does not run; `agent_mismatch`:
       * the conversation has another; `refused`: the agent's input guard refused it (`message` is its reason);
       * `forbidden`: its subject may not write to the conversation (decided in the log, with the input).
       */
      code: z.enum(['queue_full', 'precondition_failed', 'busy', 'unknown_agent', 'agent_mismatch', 'refused', 'forbidden']),
      message: z.string(),
    }),
    (data) => namesAboutAndAnswers(data.input.id),
  ),
  /**
   * The agent's input guard failed on a chat or steer — it threw, or ran past its time budget —
   * so nothing was decided: this is no answer to the input, and the same id sent again is
   * guarded again (the gateway answers 503 `guard_failed`, to be retried). `attempt` names the
   * try (one per record guarded), `message` says what failed without the guard's own error.
   */
  'guard.failed': eventContract(
    z.object({ input: z.object({ id: InputId, kind: MessageKind }), attempt: z.string(), message: z.string() }),
    // The guard decided nothing: no standing to record, only the answer a request waits for.
    (data) => namesAnswers(data.input.id),
  ),
  /** The input reached a turn: it started the turn, or the turn took it as a steered message. */
  'input.delivered': eventContract(
    z.object({ input: z.object({ id: InputId, kind: MessageKind }), turn: z.string() }),
    (data) => namesAbout(data.input.id),
  ),
  /** A turn began, answering `prompt`. */
  'turn.started': eventContract(z.object({ turn: z.string(), prompt: Prompt }), (data) => namesAbout(data.prompt.id)),
  /** The model's reply of one step, stored before any of its tool calls run. */
  'model.replied': eventContract(
    z.object({
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
    () => NAMES_NONE,
  ),
  /**
   * The agent's output guard rejected the model's final answer of step `step` (a reply with no
   * tool calls), stored in its place as the step's reply: `answer` is the rejected text, which
   * no person is shown (the transcript and the turns leave it out, the SSE stream carries the
   * event without it; the worker's log and agent.events keep it, for the re-ask's request and
   * for audit). `reask` numbers the
   * re-ask it asks for (1 for the first): the model is asked again, its next request carrying
   * the rejected answer and a message with `feedback` asking about the turn's prompt. `reask`
   * null: the guard blocked it (`feedback` is the `block` message, or the one for an answer still
   * rejected past `maxReasks`): that message is the turn's answer in its place (in its content, its
   * transcript and what later turns see), and the turn ends `refused` in the same commit.
   */
  'answer.rejected': eventContract(
    z.object({
      turn: z.string(),
      step: z.number().int().nonnegative(),
      /** Always in the log and on agent.events; the SSE stream carries the event without it. */
      answer: z.string().optional(),
      feedback: z.string(),
      reask: z.number().int().positive().nullable(),
      usage: Usage.optional(),
      carried: z.object({ tokens: z.number().int().nonnegative(), maxTokens: z.number().int().positive() }).optional(),
    }),
    () => NAMES_NONE,
  ),
  /**
   * The worker compacted the conversation's history at a step of `turn` (step `step`: before
   * that step's model request): `summary`, made by a model request of its own, stands in for
   * every earlier turn up to and including `through` (the turn, and the position of its
   * `turn.ended`) in the model requests after it — the agent's instructions, the summary, then
   * the turns after `through`, each whole. `turns`: how many turns it covers in all (it
   * summarises the summary before it too); `tokens`: its own tokens. Stored once per `through`;
   * the log, the transcript and the turns keep every turn whole.
   */
  'history.compacted': eventContract(
    z.object({
      turn: z.string(),
      step: z.number().int().nonnegative(),
      summary: z.string(),
      through: z.object({ turn: z.string(), position: z.number().int().nonnegative() }),
      turns: z.number().int().positive(),
      tokens: z.number().int().nonnegative(),
    }),
    () => NAMES_NONE,
  ),
  'tool.started': eventContract(z.object({ turn: z.string(), step: z.number().int(), call: ToolCall }), () => NAMES_NONE),
  /**
   * A call of the model's reply needs a person's approval (its tool's `needsApproval`): it is
   * not run until `approval.decided` says so, and the turn parks — no model request, no tool
   * run — while every open call of its step waits for one. `approval` is the worker's id for
   * this call of this step (call ids come from the model and are unique only within a step);
   * `expiresAt` the moment its tool's `approvalTimeout` decides it as denied (null: never).
   */
  'approval.requested': eventContract(
    z.object({
      turn: z.string(),
      step: z.number().int().nonnegative(),
      approval: ApprovalId,
      call: ToolCall,
      requestedAt: z.string(),
      expiresAt: z.string().nullable(),
    }),
    () => NAMES_NONE,
  ),
  /** A tool call's result, stored once: a resumed turn never runs it again. */
  'tool.ended': eventContract(
    z.object({
      turn: z.string(),
      step: z.number().int(),
      callId: z.string(),
      name: z.string(),
      result: z.string(),
      isError: z.boolean(),
    }),
    () => NAMES_NONE,
  ),
  /**
   * The plan changed: `items` is the whole list now, `next` the number the next new item gets
   * (past every number ever used). A call of the `todos` tool changed it (`callId`, stored with
   * the call's result, in one commit), or a rolled-back turn's changes were undone with it
   * (`callId` null, stored with its end).
   */
  'todos.updated': eventContract(
    z.object({
      turn: z.string(),
      step: z.number().int().nonnegative(),
      callId: z.string().nullable(),
      items: z.array(TodoItem),
      next: z.number().int().positive(),
    }),
    () => NAMES_NONE,
  ),
  /**
   * The conversation was handed to another agent (docs/agents.md, "Handoffs"): the model of
   * `from` called its built-in `transfer_to_<to>` tool at step `step` of `turn`, and this is
   * stored with that call's result, in one commit. The rest of the turn and every later turn
   * run `to` (its instructions, tools, model, steering policy, bounds, guard and budget) until
   * a handoff of its own hands the conversation on (or back); a chat naming another agent is
   * then `agent_mismatch`. At most one per step: the first transfer call of a reply wins.
   * With `rollback`, no transfer: the rollback of that id took back the turns that handed the
   * conversation on (`turn`, the first of them; `step` 0), and it is back with the agent that
   * answered before them.
   */
  'agent.changed': eventContract(
    z.object({ from: AgentName, to: AgentName, turn: z.string(), step: z.number().int().nonnegative(), rollback: InputId.optional() }),
    () => NAMES_NONE,
  ),
  /** The turn ended. `content` holds every answer of the turn, in order; `outcome` says why when not completed. */
  'turn.ended': eventContract(
    z.object({
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
    (data) => namesAbout(...data.steered.map((s) => s.id)),
  ),
} as const;

/** The event types declared here: the conversation's and the turn's own. */
export type CoreEventType = keyof typeof CORE_EVENT_CONTRACTS;

/** Every event type's contract: the ones above, and the input kinds' (`KIND_EVENT_CONTRACTS`); a type declared twice is refused at load. */
export const EVENT_CONTRACTS = joinEventContracts<Record<string, EventContract>>([CORE_EVENT_CONTRACTS, KIND_EVENT_CONTRACTS]) as unknown as typeof CORE_EVENT_CONTRACTS &
  KindEventContracts;

export type EventType = keyof typeof EVENT_CONTRACTS;

/** Each event type's data, as a zod schema. */
export const EventData = Object.fromEntries(Object.entries(EVENT_CONTRACTS).map(([type, contract]) => [type, contract.data])) as {
  readonly [T in EventType]: (typeof EVENT_CONTRACTS)[T]['data'];
};
export type EventDataOf<T extends EventType> = z.infer<(typeof EventData)[T]>;

/** An event as the domain makes it: type and data only; the store gives id, position and time. */
export type DomainEvent = { [T in EventType]: { type: T; data: EventDataOf<T> } }[EventType];

/** An event of one of these types. */
export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

/**
 * Whether `event` is of one of `types`: for a reader that folds some event types and passes
 * the others by — its `switch` is over those types only, and ends with a `never` check.
 */
export const isEventOf = <T extends EventType, E extends { type: string }>(event: E, types: readonly T[]): event is Extract<E, { type: T }> =>
  (types as readonly string[]).includes(event.type);

/** Whether `event` is one an input kind declares (`inputs/<kind>.ts`), not the conversation's or the turn's own. */
export const isKindEvent = <E extends { type: string }>(event: E): event is Extract<E, { type: KindEventType }> => Object.hasOwn(KIND_OF_EVENT, event.type);
