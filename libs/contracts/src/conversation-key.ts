import { z } from 'zod';

/** 1-200 characters of [A-Za-z0-9._:/-], e.g. `user-42/trip`. */
export const ConversationKey = z
  .string()
  .min(1, 'a conversation key has 1 to 200 characters')
  .max(200, 'a conversation key has 1 to 200 characters')
  .regex(/^[A-Za-z0-9._:/-]+$/, 'a conversation key holds only letters, digits and . _ : / -');

/** Ids of inputs (the client's idempotency key) share the key alphabet, so they are safe in paths and logs. */
export const InputId = z
  .string()
  .min(1, 'an input id has 1 to 200 characters')
  .max(200, 'an input id has 1 to 200 characters')
  .regex(/^[A-Za-z0-9._:/-]+$/, 'an input id holds only letters, digits and . _ : / -');

/** A schedule's firing's input id: its schedule's id and its time, so a firing is one input however often it is decided. */
export const firingInputId = (schedule: string, at: string): string => `${schedule}:fired:${Date.parse(at)}`;

/** An id of a schedule's firing's form (`firingInputId`): the worker makes those; no record on `agent.inputs` and no client may use one. */
export const isFiringInputId = (id: string): boolean => /:fired:\d+$/.test(id);

/**
 * An id of the form of the inputs calls of the built-in `schedule` tool stand for
 * (`<turn>:call:<16 hex>`, `scheduleCallInputId` of @rudder/conversation), or of the cancel of
 * such a call's schedule by a rollback (`<that>:rolled-back`, `rolledBackScheduleInputId`): the
 * worker makes those; a client's would take a call's schedule id, or its once key, before the
 * call or the rollback is decided.
 */
export const isScheduleCallInputId = (id: string): boolean => /:call:[0-9a-f]{16}(:rolled-back)?$/.test(id);

/** An approval's id, made by the worker (`approval.requested`): the input ids' alphabet, so it is safe in paths. */
export const ApprovalId = z
  .string()
  .min(1, 'an approval id has 1 to 200 characters')
  .max(200, 'an approval id has 1 to 200 characters')
  .regex(/^[A-Za-z0-9._:/-]+$/, 'an approval id holds only letters, digits and . _ : / -');

/** An agent's name: 1-100 characters of [A-Za-z0-9._:-]. */
export const AgentName = z
  .string()
  .min(1, 'an agent name has 1 to 100 characters')
  .max(100, 'an agent name has 1 to 100 characters')
  .regex(/^[A-Za-z0-9._:-]+$/, 'an agent name holds only letters, digits and . _ : -');

/** A subject (who wrote an input, who is granted access): 1-200 characters, no control characters, storable. */
export const Subject = z
  .string()
  .min(1, 'a subject has 1 to 200 characters')
  .max(200, 'a subject has 1 to 200 characters')
  .regex(/^(?:[^\u0000-\u001f\u007f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])+$/, 'a subject holds no control characters and no lone surrogates');

/** The kinds of input that carry a user's message (a chat, a steer): what waits in a conversation, is refused or retracted. */
export const MessageKind = z.enum(['chat', 'steer']);
export type MessageKind = z.infer<typeof MessageKind>;
