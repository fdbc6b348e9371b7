import { z } from 'zod';
import { ConversationKey, InputId } from './conversation-key';

/**
 * Records on `agent.inputs`, key = conversation key, value = JSON of one of these.
 * Versioned by `v`: a new shape gets a new version and readers upcast the old one.
 */
export const ChatInputV1 = z.object({
  v: z.literal(1),
  type: z.literal('chat'),
  /** Idempotency key: the same id again is the same input and is answered once. */
  id: InputId,
  conversation: ConversationKey,
  /** Who wrote it (the gateway's authenticated subject); other producers name themselves. */
  subject: z.string().min(1).max(200).default('anonymous'),
  /** One or more user messages, answered by one reply. */
  messages: z.array(z.string().min(1)).min(1),
  sentAt: z.iso.datetime(),
});
export type ChatInput = z.infer<typeof ChatInputV1>;

export const InputRecord = z.discriminatedUnion('type', [ChatInputV1]);
export type InputRecord = z.infer<typeof InputRecord>;
export type InputKind = InputRecord['type'];

/** The text a model and a reader see for an input of several messages. */
export const inputText = (messages: readonly string[]): string => messages.join('\n\n');
