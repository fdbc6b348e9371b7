import { EntitySchema, type EntitySchemaColumnOptions, type ValueTransformer } from 'typeorm';
import type { CompanionApproval, ConversationEvent, InputState, Rejection, TranscriptItem, TurnStatus, Usage } from '@rudder/contracts';
import type { ConversationState } from '@rudder/conversation';

/**
 * The read models: each row type as the fold (`projection/fold-rows.ts`) and the queries use it, and
 * its table as a TypeORM `EntitySchema` (plain objects, no decorators). Properties are camelCase,
 * columns snake_case; positions are numbers and times ISO strings on this side of the mapping.
 * Every table is keyed by conversation first: input ids are the clients' idempotency keys, so
 * two conversations may use the same one, and every query is scoped to the conversation the
 * gateway authorized. The tables are made by `migrations/`.
 */

export type ConversationRow = {
  key: string;
  /** The position of the last of its events folded: reads that must reflect a write wait for it. */
  position: number;
  /**
   * Its state as the worker's `evolve` folds it (libs/conversation `ConversationState`): owner,
   * agent, grants, the running turn, the steers waiting for it, the queue behind it, the last
   * input. The status is read from it; the companion has no queue rules of its own.
   */
  state: ConversationState;
  /** When the state's running turn started (its `turn.started`); null when none runs. */
  runningStartedAt: string | null;
};

export type InputRow = {
  conversation: string;
  id: string;
  kind: 'chat' | 'steer';
  /** Empty for a rejected input: its refusal keeps only the `digest` of its text. */
  text: string;
  /** A rejected input's: the SHA-256 of its joined text (`input.rejected`'s); null for every other. */
  digest: string | null;
  /** Null for a rejected input. */
  messages: string[] | null;
  /** Null for a rejected input. */
  subject: string | null;
  /** When it was accepted (or, for a rejected input, refused). */
  acceptedAt: string;
  /** The position of its `input.accepted` (or `input.rejected`): the acceptance order. */
  position: number;
  /** `pending` from `input.accepted` until one of the others, which are final (the first one stands); `rejected` was never pending. */
  state: InputState;
  /** Why it was rejected; null unless `state` is `rejected`. */
  rejectionCode: Rejection['code'] | null;
  rejectionMessage: string | null;
  /** The worker's decision on a steer (`steer.accepted`): null until it is made, and for chats. */
  steerTurn: string | null;
  steerLanded: boolean | null;
  /** The follow-up it was collapsed into (`inputs.collapsed`): its turn answers this one; null unless `state` is `collapsed`. */
  collapsedInto: string | null;
};

export type TurnRow = {
  conversation: string;
  id: string;
  promptId: string;
  promptText: string;
  status: 'running' | TurnStatus;
  outcome: string | null;
  content: string;
  steered: { id: string; text: string }[];
  /** The agent that answers it: the conversation's when it started, then the one each handoff in it chose (`agent.changed`). */
  agent: string | null;
  /** The replies' usage, summed as they are stored; the turn's end states the total. */
  usage: Usage | null;
  /** It was asked to wind down and ended at its next step (`turn.ended`'s `woundDown`). */
  woundDown: boolean;
  /** It was rolled back (`turns.rolledBack`, or a chat's `onBusy: "rollback"`): the transcript hides its rows unless asked. */
  rolledBack: boolean;
  startedAt: string;
  endedAt: string | null;
};

/**
 * A tool call that needed a person's approval (`approval.requested`), and what became of it:
 * `awaiting` until `approval.decided` makes it `approved` or `denied`, or the turn closes it
 * unrun (`closed`: a `tool.ended` for the call while it still awaits, or the turn's end). The
 * first final state stands.
 */
export type ApprovalRow = {
  conversation: string;
  /** The worker's id for the call's approval (`approval.requested`'s `approval`). */
  approval: string;
  turn: string;
  step: number;
  callId: string;
  tool: string;
  /** The JSON the model called the tool with. */
  arguments: string;
  requestedAt: string;
  /** When its tool's timeout denies it; null: never. */
  expiresAt: string | null;
  state: CompanionApproval['state'];
  /** The decision's reason (a timeout's says so); null while awaiting, when closed, or when none was given. */
  reason: string | null;
  /** The arguments a person approved it with instead of the model's (JSON); null: as called. */
  editedArguments: string | null;
  /** Who decided; null while awaiting, when closed, or when its timeout decided it. */
  subject: string | null;
  /** When it was decided (its `approval.decided`); null while awaiting and when closed unrun. */
  decidedAt: string | null;
  /** The position of its `approval.requested`: the request order. */
  position: number;
};

/** A delivered message: the transcript's item (whether its turn was rolled back is its turn's row's to say), and where it sorts. */
export type TranscriptRow = Omit<TranscriptItem, 'rolledBack' | 'forkedFrom'> & {
  conversation: string;
  /** Sort key and cursor: the position of the event that delivered the message, then its index within it. */
  position: number;
  part: number;
  /** The source's conversation and turn of a message copied by a fork (`conversation.forked`); null for every other. */
  forkedFrom: { key: string; turn: string } | null;
};

/** A copy of an event, for SSE replay after Last-Event-ID (it was parsed as a `ConversationEvent` before it was stored). */
export type EventCopyRow = Omit<ConversationEvent, 'v' | 'type' | 'data'> & { type: ConversationEvent['type']; data: unknown };

/**
 * A follow-up or recap of a conversation, made or being made (`affordances/`): one row per
 * conversation and kind, for the latest position asked about. It is a cache every gateway sees
 * (through any companion) and the claim that keeps two companions from asking the model at once.
 */
export type AffordanceRow = {
  conversation: string;
  kind: 'followups' | 'recap';
  /** The position of the conversation's last `turn.ended` when it was asked for: what it was made from. */
  position: number;
  /** What was made (`{suggestions}` or `{recap}`); null while it is being made, or after the asker failed. */
  answer: { suggestions: string[] } | { recap: string } | null;
  /** The asker's claim while its model request runs; null otherwise. */
  claim: string | null;
  /** A claim past this time is abandoned (its companion died): the next ask claims it. */
  claimedUntil: string | null;
  madeAt: string | null;
};

/** bigint columns hold positions, all below 2^53. */
const asNumber: ValueTransformer = { to: (value: unknown) => value, from: (value: string | number | null) => (value === null ? null : Number(value)) };
/** Times come as a Date from a row, as a string from JSON (`read-models/recordsets.ts`). */
const asIsoTime: ValueTransformer = { to: (value: unknown) => value, from: (value: Date | string | null) => (value === null ? null : new Date(value).toISOString()) };

const text = (name?: string, nullable = false): EntitySchemaColumnOptions => ({ type: 'text', name, nullable });
const key = (name?: string): EntitySchemaColumnOptions => ({ type: 'text', name, primary: true });
const position = (name?: string, nullable = false): EntitySchemaColumnOptions => ({ type: 'bigint', name, nullable, transformer: asNumber });
const time = (name: string, nullable = false): EntitySchemaColumnOptions => ({ type: 'timestamptz', name, nullable, transformer: asIsoTime });
/** The key of a conversation's rows in log order: its key, then an event's position. */
const atPosition = (): Record<'conversation' | 'position', EntitySchemaColumnOptions> => ({ conversation: key(), position: { ...position(), primary: true } });
const json = (nullable = false): EntitySchemaColumnOptions => ({ type: 'jsonb', nullable });

export const Conversations = new EntitySchema<ConversationRow>({
  name: 'Conversation',
  tableName: 'conversations',
  columns: {
    key: key(),
    position: position(),
    state: json(),
    runningStartedAt: time('running_started_at', true),
  },
});

export const Inputs = new EntitySchema<InputRow>({
  name: 'Input',
  tableName: 'inputs',
  columns: {
    conversation: key(),
    id: key(),
    kind: text(),
    text: text(),
    digest: text(undefined, true),
    messages: json(true),
    subject: text(undefined, true),
    acceptedAt: time('accepted_at'),
    position: position(),
    state: text(),
    rejectionCode: text('rejection_code', true),
    rejectionMessage: text('rejection_message', true),
    steerTurn: text('steer_turn', true),
    steerLanded: { type: 'boolean', name: 'steer_landed', nullable: true },
    collapsedInto: text('collapsed_into', true),
  },
});

export const Turns = new EntitySchema<TurnRow>({
  name: 'Turn',
  tableName: 'turns',
  columns: {
    conversation: key(),
    id: key(),
    promptId: text('prompt_id'),
    promptText: text('prompt_text'),
    status: text(),
    outcome: text(undefined, true),
    content: text(),
    steered: json(),
    agent: text(undefined, true),
    usage: json(true),
    woundDown: { type: 'boolean', name: 'wound_down', default: false },
    rolledBack: { type: 'boolean', name: 'rolled_back', default: false },
    startedAt: time('started_at'),
    endedAt: time('ended_at', true),
  },
});

export const Approvals = new EntitySchema<ApprovalRow>({
  name: 'Approval',
  tableName: 'approvals',
  columns: {
    conversation: key(),
    approval: key(),
    turn: text(),
    step: { type: 'integer' },
    callId: text('call_id'),
    tool: text(),
    arguments: text(),
    requestedAt: time('requested_at'),
    expiresAt: time('expires_at', true),
    state: text(),
    reason: text(undefined, true),
    editedArguments: text('edited_arguments', true),
    subject: text(undefined, true),
    decidedAt: time('decided_at', true),
    position: position(),
  },
});

export const Transcript = new EntitySchema<TranscriptRow>({
  name: 'TranscriptMessage',
  tableName: 'transcript',
  columns: {
    ...atPosition(),
    part: { type: 'integer', primary: true },
    id: text(),
    role: text(),
    text: text(),
    turn: text(undefined, true),
    steered: { type: 'boolean' },
    at: time('at'),
    forkedFrom: { type: 'jsonb', name: 'forked_from', nullable: true },
  },
});

export const EventCopies = new EntitySchema<EventCopyRow>({
  name: 'EventCopy',
  tableName: 'events',
  columns: {
    ...atPosition(),
    id: text(),
    type: text(),
    data: json(),
    at: time('at'),
  },
});

export const Affordances = new EntitySchema<AffordanceRow>({
  name: 'Affordance',
  tableName: 'affordances',
  columns: {
    conversation: key(),
    kind: key(),
    position: position(),
    answer: json(true),
    claim: { type: 'uuid', nullable: true },
    claimedUntil: time('claimed_until', true),
    madeAt: time('made_at', true),
  },
});

export const readModelEntities = [Conversations, Inputs, Turns, Approvals, Transcript, EventCopies, Affordances];
