import { z } from 'zod';
import { ErrorStatus } from './api';
import { MessageKind } from './conversation-key';
import { ConversationEventRecord } from './event-records';
import { TodoItem, TurnStatus, Usage } from './events';

/**
 * The HTTP API's answers as zod schemas: what `GET /openapi.json` is generated from, and what
 * a client may check an answer against. The answer types the gateway returns are inferred from
 * them (api.ts), so the document cannot drift from the code.
 */
const Pending = z.object({ id: z.string(), text: z.string() });

/**
 * A pending input as the status shows it: a steer waiting for the running turn (`steering`),
 * and, with its kind, an input waiting to be a turn of its own (`queue`). The decider's state
 * holds each pending input with at least these fields (its `PendingInput`), and the status shows
 * exactly these of it (`statusOf` in the companion parses it with them): a field added here is
 * shown once the state holds it.
 */
export const SteeringItem = z.object({
  id: z.string(),
  text: z.string(),
  /** How many times it was edited (`PATCH …/inputs/{id}`): 0 as sent. */
  revision: z.number().int().nonnegative().default(0),
});
export const QueueItem = SteeringItem.extend({ kind: MessageKind });
/** A queue item's fields as the state holds them (before defaults: a state stored before a field was added lacks it). */
export type QueueItemHeld = z.input<typeof QueueItem>;

/**
 * A call waiting for a person's approval (`approval.requested`), as the status lists it:
 * `approvalId` is what `POST …/approvals/{approvalId}` decides; `arguments` the JSON the model
 * called it with; `expiresAt` when its tool's timeout denies it (null: never).
 */
export const AwaitingApproval = z
  .object({
    approvalId: z.string(),
    turn: z.string(),
    callId: z.string(),
    tool: z.string(),
    arguments: z.string(),
    requestedAt: z.string(),
    expiresAt: z.string().nullable(),
  })
  .meta({ id: 'AwaitingApproval' });

/**
 * A call's approval as a turn shows it: waiting (`awaiting`), decided (`approved`, `denied`:
 * by `subject`, or by its timeout when `subject` is null), or `closed` unrun by the turn's end
 * before anyone decided (a stop, an interrupt).
 */
export const TurnApproval = AwaitingApproval.extend({
  state: z.enum(['awaiting', 'approved', 'denied', 'closed']),
  reason: z.string().nullable(),
  editedArguments: z.string().nullable(),
  subject: z.string().nullable(),
  decidedAt: z.string().nullable(),
}).meta({ id: 'TurnApproval' });

/** A subject's access to a conversation another subject owns. */
export const Grant = z.object({ subject: z.string(), access: z.enum(['read', 'write']) });

/**
 * What the conversation's model requests carry (docs/agents.md, "The context budget"):
 * `carriedTokens`, what its latest model request carried, in tokens as its model counts them, and
 * `maxTokens`, its agent's budget (both null before the first request); `lastCompaction`, the
 * latest summary of its older turns (`history.compacted`): the last turn it covers, how many
 * turns it covers in all, its tokens; null while none was made.
 */
export const ContextStatus = z.object({
  carriedTokens: z.number().int().nullable(),
  maxTokens: z.number().int().nullable(),
  lastCompaction: z.object({ through: z.string(), turns: z.number().int(), tokens: z.number().int() }).nullable(),
});
export type ContextStatus = z.infer<typeof ContextStatus>;
/** The context of a conversation no model request was made for. */
export const NO_CONTEXT: ContextStatus = { carriedTokens: null, maxTokens: null, lastCompaction: null };

/** A conversation's status as everyone who may read it sees it; the companion's (`CompanionStatus`) adds what the gateway authorizes by. */
export const StatusFields = z.object({
  key: z.string(),
  running: z.object({ turn: z.string(), startedAt: z.string() }).nullable(),
  steering: z.array(SteeringItem),
  queue: z.array(QueueItem),
  lastInputId: z.string().nullable(),
  /** The agent that answers now: its first input's, or the one its last handoff chose (`agent.changed`); null before the first accepted input. */
  agent: z.string().nullable(),
  context: ContextStatus,
  /** The running turn's calls waiting for a person's approval, in the order they were asked for. */
  awaiting: z.array(AwaitingApproval),
  /**
   * No turn starts from the queue before this moment (ISO 8601, UTC): a follow-up under
   * `queue: {debounceMs}` holds it until no follow-up came for that long (`queue.held`); null
   * when nothing waits or nothing holds it.
   */
  heldUntil: z.string().nullable(),
  /**
   * The log position of the conversation's last event this status reflects (0: none): an event
   * stream resumed after it (`Last-Event-ID`) carries everything stored since.
   */
  position: z.number().int().nonnegative(),
});

export const StatusAnswer = StatusFields.extend({ grants: z.array(Grant).optional() }).meta({
  id: 'ConversationStatus',
  description: '`grants` is shown to the owner only.',
});

export const TranscriptAnswer = z
  .object({
    items: z.array(
      z.object({
        id: z.string(),
        role: z.enum(['user', 'assistant', 'approval']).describe('`approval`: a decision on a call that waited for approval (`id` its approval id).'),
        text: z.string(),
        turn: z.string().nullable(),
        steered: z.boolean(),
        at: z.string(),
        /** Its turn was rolled back: shown only with `?include=rolledBack`. */
        rolledBack: z.boolean().default(false),
        forkedFrom: z
          .object({ key: z.string(), turn: z.string() })
          .optional()
          .describe("A message of the source's turn `turn` of conversation `key`, copied when this conversation was forked from it (`turn` of the item is null: the turn is the source's)."),
      }),
    ),
    next: z.string().nullable(),
  })
  .meta({
    id: 'TranscriptPage',
    description: 'Oldest first; `next` is an opaque cursor for `?after=`, null at the end. The rows of rolled-back turns only with `?include=rolledBack`, marked `rolledBack`.',
  });

export const TurnAnswer = z
  .object({
    id: z.string(),
    prompt: Pending,
    status: z.union([z.literal('running'), TurnStatus]),
    outcome: z.string().nullable(),
    steered: z.array(Pending),
    content: z.string(),
    /** The agent that answered it: the conversation's when it started, then the one each handoff in it chose. */
    agent: z.string().nullable(),
    usage: Usage.nullable(),
    /** It was asked to wind down (an interrupt, a graceful stop) and ended at its next step. */
    woundDown: z.boolean(),
    /** It was rolled back (`POST …/rollback`, or a chat's `onBusy: "rollback"`): no later model request has it. */
    rolledBack: z.boolean().default(false),
    /** Its calls that needed a person's approval, and what became of each. */
    approvals: z.array(TurnApproval),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
  })
  .meta({ id: 'TurnView' });

export const StreamTokenAnswer = z
  .object({ token: z.string(), expiresAt: z.string() })
  .meta({ id: 'StreamToken', description: "A short-lived token that opens this conversation's event stream only." });

/** How many follow-up suggestions `GET …/followups?n=` may ask for (1 to this many; 3 when `n` is absent). */
export const FOLLOWUPS_MAX = 5;
export const FOLLOWUPS_DEFAULT = 3;

export const FollowupsAnswer = z
  .object({ suggestions: z.array(z.string()).max(FOLLOWUPS_MAX) })
  .meta({
    id: 'Followups',
    description:
      "At most `n` short next messages in the user's voice, made from the transcript by a model request of their own (cached per the conversation's last ended turn). Empty when no turn has ended yet, or when making them failed (never an error). A clicked one is sent as an ordinary chat.",
  });

export const RecapAnswer = z
  .object({ recap: z.string() })
  .meta({
    id: 'Recap',
    description:
      "Two or three sentences for a person returning to the conversation (cached per its last ended turn; never shown to the agent). Empty when no turn has ended yet, or when making it failed (never an error).",
  });

export const TodosAnswer = z
  .object({
    items: z.array(TodoItem),
    position: z.number().int().nonnegative().describe('The log position the list is read as of: a `todos.updated` at or below it is in `items`.'),
  })
  .meta({
    id: 'Todos',
    description:
      "The agent's plan for the conversation, as its model last wrote it with the `todos` tool: items in order, each numbered for the conversation's life (a deleted item's number is never used again). Empty when the agent keeps none. Follow `todos.updated` on the stream after `position`.",
  });

export const HealthAnswer = z.object({ ok: z.literal(true) }).meta({ id: 'Health' });

/** Codes the gateway answers beyond `ErrorStatus`: a subject over its own limits, and a bug. */
export const EdgeErrorCodes = ['rate_limited', 'internal'] as const;

export const ErrorAnswer = z
  .object({
    error: z.object({
      code: z.enum([...(Object.keys(ErrorStatus) as (keyof typeof ErrorStatus)[]), ...EdgeErrorCodes]),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  })
  .meta({ id: 'Error', description: 'Every error answer; `code` is stable, `message` is for people.' });

/** A token of the model's streamed reply, as `GET …/events` sends it (no SSE id: not replayed). */
export const TokenEventData = z.object({ turn: z.string(), step: z.number().int(), text: z.string() }).meta({ id: 'TokenEvent' });

/**
 * One message of `GET …/events` (text/event-stream): a stored event, with its position as the
 * SSE `id` and its type as the SSE `event`, or a `token` with id `<position>.<offset>` (`StreamCursor`).
 */
export const StreamMessage = z
  .union([
    ...ConversationEventRecord.options.map((record) =>
      z.object({ id: z.string().describe('the event position: resume with Last-Event-ID'), event: record.shape.type, data: record }),
    ),
    z.object({
      id: z.string().describe('<position>.<offset>: the last position sent before it and its offset on agent.tokens; resume with Last-Event-ID'),
      event: z.literal('token'),
      data: TokenEventData,
    }),
  ])
  .meta({ id: 'StreamMessage', description: 'One Server-Sent Event: `id:` (see Last-Event-ID), `event:` its type, `data:` the JSON below.' });

/** The SSE event types a stream may carry: every stored event's type, and `token`. */
export const streamEventTypes = (): string[] => [...ConversationEventRecord.options.map((record) => record.shape.type.value), 'token'];
