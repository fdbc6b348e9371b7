import { z } from 'zod';
import { AgentName, InputId } from '../conversation-key';
import { eventContract, namesAbout } from '../event-parts';
import { BodyText, envelope, inputKind, UserText } from './shared';

/** The longest quiet a `{debounceMs}` queue waits for (ms). */
export const DEBOUNCE_MS_MAX = 60_000;

/**
 * What a new follow-up does to the follow-ups waiting before it (an agent's `queue`, or a chat's
 * own): `each` (every one is a turn of its own), `latest` (the waiting ones are answered as
 * collapsed into the new one, which alone is answered by a turn), `merge` (the new one joins the
 * last follow-up waiting: one turn whose prompt is all their messages, in order), `{debounceMs}`
 * (it merges as `merge` does, and no turn starts from the queue until it was quiet — no new
 * follow-up sent — for `debounceMs`).
 */
export const QueuePolicy = z.union([
  z.enum(['each', 'latest', 'merge']),
  z
    .object({
      debounceMs: z
        .number()
        .int('debounceMs is a whole number of milliseconds')
        .positive(`debounceMs must be more than 0 and at most ${DEBOUNCE_MS_MAX}`)
        .max(DEBOUNCE_MS_MAX, `debounceMs must be more than 0 and at most ${DEBOUNCE_MS_MAX}`),
    })
    .strict(),
]);
export type QueuePolicy = z.infer<typeof QueuePolicy>;

/** A chat: one or more user messages, answered by a turn of their own after what waits before them. */
export const ChatInputV1 = z.object({
  ...envelope,
  type: z.literal('chat'),
  /** One or more user messages, answered by one reply. */
  messages: z.array(UserText).min(1),
  /** What it does to a busy conversation (a turn running); see OnBusy. */
  onBusy: z.enum(['enqueue', 'reject', 'interrupt', 'rollback']).default('enqueue'),
  /** Refused (`precondition_failed`) unless the conversation's last accepted input is this one. */
  ifLastInputId: InputId.optional(),
  /**
   * Refused (`busy`) while a turn runs if the conversation's agent takes no steers: its running
   * turn is not to be wound down for this input (the Responses door's follow-up on a running
   * response: 409 `conversation_locked`). Absent: no such condition. A worker that does not
   * know it leaves it out (the record's other fields are unchanged).
   */
  ifSteerable: z.literal(true).optional(),
  /**
   * The input this chat continues (the Responses door's `previous_response_id`): while a turn
   * runs and that input no longer waits (its turn is the running one), the running turn winds
   * down as for `onBusy: interrupt`; while that input still waits in the queue, this chat queues
   * behind it and winds nothing down. Absent: `onBusy` alone says what it does to a busy conversation.
   */
  continues: InputId.optional(),
  /**
   * The nonce of a conversation key the Responses door derived for this chat's subject
   * (`derivedConversationKey` in @rudder/conversation). A derived key's conversation is opened
   * only by a chat whose subject and nonce derive it, and such a chat is refused (`forbidden`)
   * by a conversation another subject opened.
   */
  derivedFrom: InputId.optional(),
  /** The agent that answers the conversation, chosen by its first input (the default agent when absent); later inputs may only name the same. */
  agent: AgentName.optional(),
  /** What it does to the follow-ups waiting before it, instead of its agent's `queue`; absent: the agent's. */
  queue: QueuePolicy.optional(),
});
export type ChatInput = z.infer<typeof ChatInputV1>;

/** `POST /v1/conversations/{key}/chat`: `text`, or `messages` for several user messages answered by one reply. */
export const ChatBody = z
  .object({
    text: BodyText.optional(),
    messages: z.array(BodyText).min(1, 'messages must hold at least one message').max(32).optional(),
    id: InputId.optional(),
    onBusy: z.enum(['enqueue', 'reject', 'interrupt', 'rollback']).optional(),
    ifLastInputId: InputId.optional(),
    agent: AgentName.optional(),
    queue: QueuePolicy.optional(),
  })
  .strict()
  .refine((b) => (b.text === undefined) !== (b.messages === undefined), {
    message: 'give either text or messages, not both and not neither',
  });
export type ChatBody = z.infer<typeof ChatBody>;

export const ChatAcceptedAnswer = z
  .object({ id: z.string(), turn: z.null(), position: z.number().int().nonnegative() })
  .meta({ id: 'ChatAccepted', description: 'The follow-up is accepted; `position` inputs are ahead of it (0: it starts now).' });
export type ChatAccepted = z.infer<typeof ChatAcceptedAnswer>;

/** Its answers are the messages' events, which the conversation's own contract declares (`events.ts`: `input.accepted`, `input.rejected`, …). */
export const CHAT = inputKind({
  record: ChatInputV1,
  events: {
    /**
     * Follow-ups waiting (`from`, in the order they were sent) were answered by the chat `into`,
     * accepted just before, under its `queue` policy: `latest` — they are answered by its turn and
     * never are turns of their own; `merge` — `into` is the last of them waiting and the new
     * chat joins it (`from` is the new chat): one turn whose prompt is all their messages, in order.
     */
    'inputs.collapsed': eventContract(
      z.object({ into: InputId, from: z.array(InputId).min(1), policy: z.enum(['latest', 'merge']) }),
      (data) => namesAbout(...data.from),
    ),
    /**
     * A chat accepted under `queue: {debounceMs}`: no turn starts from the queue before `until`
     * (when it was accepted, plus `debounceMs`; a later one moves it later). The worker owning the
     * conversation starts the turn once it is due (the state's `dueAt`).
     */
    'queue.held': eventContract(z.object({ input: InputId, until: z.iso.datetime() }), (data) => namesAbout(data.input)),
  },
});
