import { editedMessages, inputDigest, inputText, type DomainEvent, type EventDataOf, type MessageKind } from '@rudder/contracts';
import { receiptKey } from '../once-keys';
import { sameList } from '../same-input';
import { without, type ConversationState, type PendingInput } from '../state';
import { REUSED, type InputOf, type InputRules } from './rules';
import { boundsRefusal, writeRefusal } from './shared';

/** The input as edited: its id, its kind, its new text, its revision. */
export type EditAnswer = { id: string; kind: MessageKind; text: string; revision: number };

/** Why an edit changed nothing: its code and what it says (and the input's revision, when it was found). */
export type EditRefusal = Pick<EventDataOf<'edit.refused'>, 'code' | 'message' | 'revision'>;

/** The input `id` while it is pending: a steer the running turn has not taken, or an input in the queue. */
const pendingOf = (state: ConversationState, id: string): PendingInput | undefined =>
  state.steers.find((p) => p.id === id) ?? state.queue.find((p) => p.id === id);

/**
 * An edit gives a pending input — a follow-up waiting in the queue, or a steer the running turn
 * has not taken — new text, in its kind and place: what waits is what the model will read, so
 * the turn it starts, or the step that takes it, reads only the latest revision. What is no
 * longer pending (delivered: taken, or its turn started; taken back, dropped) or unknown is not
 * found. It is refused, too, when its subject may not write, when `ifRevision` is not the
 * input's revision, when its text is not the input's shape (`messages` only for a chat, `text`
 * for a steer or a chat of one message), when the agent's input guard refuses the new text, and
 * when the new text would pass the bounds of what may wait (counted as if the input were sent
 * anew in its place).
 */
export const editRules: InputRules<'edit', EditAnswer, EditRefusal> = {
  decide: (state, input, { agents, guarded }) => {
    const messages = editedMessages(input);
    const text = inputText(messages);
    const refused = (code: EditRefusal['code'], message: string, revision?: number): DomainEvent[] => [
      {
        type: 'edit.refused',
        data: { edit: input.id, target: input.target, code, message, digest: inputDigest(text), ...(revision === undefined ? {} : { revision }) },
      },
    ];
    const unwritable = writeRefusal(state, input.subject);
    if (unwritable !== null) return refused('forbidden', unwritable);
    const pending = pendingOf(state, input.target);
    if (!pending) return refused('not_found', `input ${input.target} is not pending: it was delivered, taken back or dropped, or never accepted`);
    const revision = pending.revision ?? 0;
    if (input.ifRevision !== undefined && input.ifRevision !== revision) {
      return refused('precondition_failed', `input ${input.target} is at revision ${revision}, not ${input.ifRevision}`, revision);
    }
    const shape = shapeRefusal(pending, input);
    if (shape !== null) return refused('shape', shape, revision);
    if (guarded && 'failed' in guarded) {
      return [{ type: 'guard.failed', data: { input: { id: input.id, kind: pending.kind }, attempt: guarded.attempt, message: guarded.failed } }];
    }
    if (guarded) return refused('refused', guarded.refuse, revision);
    const policy = agents.policyOf(state.agent ?? agents.defaultAgent) ?? agents.policyOf(agents.defaultAgent);
    const inSteering = state.steers.some((p) => p.id === pending.id);
    const elsewhere = { ...state, steers: without(state.steers, pending.id), queue: without(state.queue, pending.id) };
    const bounds = policy === undefined ? null : boundsRefusal(elsewhere, policy, text, inSteering);
    if (bounds !== null) return refused('queue_full', bounds.message, revision);
    return [{ type: 'input.edited', data: { edit: input.id, input: { id: pending.id, kind: pending.kind, text, messages }, revision: revision + 1 } }];
  },
  receiptKeys: (input) => [receiptKey.control('edit', input.id)],
  receipt: {
    // The same edit again (its id, its target and its text) is answered by its decision; another under its id is an id reused.
    'input.edited': {
      settles: true,
      read: ({ input: edited, revision }, input) =>
        edited.id === input.target && sameList(edited.messages, editedMessages(input)) ? { answer: { id: edited.id, kind: edited.kind, text: edited.text, revision } } : REUSED,
    },
    'edit.refused': {
      settles: true,
      read: ({ target, digest, code, message, revision }, input) =>
        target === input.target && digest === inputDigest(inputText(editedMessages(input))) ? { refusal: { code, message, revision } } : REUSED,
    },
    'guard.failed': { settles: false, liveOnly: true, read: (data) => ({ guardFailed: data.message }) },
  },
  events: {
    'input.edited': {
      evolve: (state, { input, revision }) => {
        const edited = (p: PendingInput): PendingInput => (p.id === input.id ? { ...p, text: input.text, messages: input.messages, revision } : p);
        return { ...state, steers: state.steers.map(edited), queue: state.queue.map(edited) };
      },
      onceKey: (data) => receiptKey.control('edit', data.edit),
    },
    'edit.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('edit', data.edit) },
  },
  // The new text, as a message of the input's kind (a chat's when the batch found it not pending: then it is refused anyway).
  guarded: (state, input) => ({ kind: pendingOf(state, input.target)?.kind ?? 'chat', text: inputText(editedMessages(input)) }),
};

/** Why the new text is not the input's shape: `messages` edit a chat; `text` a steer, or a chat of one message. */
function shapeRefusal(pending: PendingInput, input: InputOf<'edit'>): string | null {
  if ('messages' in input.to && pending.kind !== 'chat') return `input ${pending.id} is a steer: edit it with text, not messages`;
  if ('text' in input.to && pending.kind === 'chat' && pending.messages.length > 1) {
    return `input ${pending.id} is a chat of ${pending.messages.length} messages: edit it with messages, not text`;
  }
  return null;
}
