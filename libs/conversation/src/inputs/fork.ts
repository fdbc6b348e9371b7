import type { DomainEvent, EventDataOf, TodoItem } from '@rudder/contracts';
import { derivedKeyRefusal } from '../derived-keys';
import { receiptKey } from '../once-keys';
import { mayAccess, type ConversationState } from '../state';
import { REUSED, type InputRules } from './rules';

/** The new conversation, and the source's turn its history ends with. */
export type ForkAnswer = { key: string; from: string; atTurn: string };

/** Why a fork made nothing: its code and what it says. */
export type ForkRefusal = Pick<EventDataOf<'fork.refused'>, 'code' | 'message'>;

/** What the fork copies of the source at its turn: `conversation.forked`'s data but the fork's id, and the plan then. */
export type ForkCopy = Omit<EventDataOf<'conversation.forked'>, 'fork'> & {
  todos: { items: TodoItem[]; next: number };
  /** The agent answering the source when the turn ended (a handoff before it chose it); null: as the source's now. */
  agent: string | null;
};

/**
 * The source as the worker read it from the event store for one fork, just before the fork's
 * decision: its state now (who may read it), and what the fork copies at the turn asked — or
 * why there is no such turn (`not_found`: unknown, rolled back, none ended; `busy`: running).
 */
export type ForkSource = { state: ConversationState; copy: ForkCopy | { refusal: 'not_found' | 'busy'; message: string } };

/**
 * A fork, decided under the lock of the NEW conversation (`input.conversation`, the body's
 * `into`): the source is read from the event store by the worker (`context.forkSource`), at
 * decision time, so a read access revoked before it is seen. It needs `read` on the source and
 * a key that is no conversation yet; the fork is opened (`conversation.opened`: owner the
 * forking subject, agent the one answering the source when that turn ended; grants are not copied) and takes the source's history
 * up to the turn (`conversation.forked`) and its plan then (`todos.updated` without a call).
 * Nothing is written to the source.
 */
export const forkRules: InputRules<'fork', ForkAnswer, ForkRefusal> = {
  decide: (state, input, context) => {
    const refused = (code: ForkRefusal['code'], message: string): DomainEvent[] => [
      { type: 'fork.refused', data: { fork: input.id, from: input.from, atTurn: input.atTurn ?? null, code, message } },
    ];
    const source = context.forkSource;
    if (source === undefined || source.state.owner === null) return refused('not_found', `no conversation ${input.from}`);
    if (!mayAccess(source.state, input.subject, 'read')) return refused('forbidden', `${input.subject} may not read conversation ${input.from}`);
    // A key the Responses door derives is opened only for the subject it is derived for (its forks too).
    const derived = derivedKeyRefusal(state.owner, { conversation: input.conversation, subject: input.subject, derivedFrom: input.derivedFrom });
    if (derived !== null) return refused('forbidden', derived);
    if (opened(state)) return refused('conflict', `conversation ${input.conversation} exists; fork into a new key`);
    const { copy } = source;
    if ('refusal' in copy) return refused(copy.refusal, copy.message);
    const { todos, agent, ...forked } = copy;
    const plan: DomainEvent[] =
      todos.items.length === 0 ? [] : [{ type: 'todos.updated', data: { turn: copy.atTurn, step: 0, callId: null, items: todos.items, next: todos.next } }];
    return [
      { type: 'conversation.opened', data: { owner: input.subject, agent: agent ?? source.state.agent ?? '' } },
      { type: 'conversation.forked', data: { fork: input.id, ...forked } },
      ...plan,
    ];
  },
  receiptKeys: (input) => [receiptKey.control('fork', input.id)],
  receipt: {
    // The same fork again (its id, source and turn asked) is answered by its decision; another under its id is an id reused.
    'conversation.forked': {
      settles: true,
      read: ({ from, atTurn }, input) => (from === input.from && (input.atTurn === undefined || input.atTurn === atTurn) ? { answer: { key: input.conversation, from, atTurn } } : REUSED),
    },
    'fork.refused': {
      settles: true,
      read: ({ from, atTurn, code, message }, input) => (from === input.from && atTurn === (input.atTurn ?? null) ? { refusal: { code, message } } : REUSED),
    },
  },
  events: {
    // The fork's history is the worker's fold's (`evolveConversation`); its state is the opened one's, its plan the `todos.updated` after it.
    'conversation.forked': { evolve: (state) => state, onceKey: (data) => receiptKey.control('fork', data.fork) },
    'fork.refused': { evolve: (state) => state, onceKey: (data) => receiptKey.control('fork', data.fork) },
  },
};

/** The key is a conversation already: something was accepted into it, or it was opened (a fork's). */
const opened = (state: ConversationState): boolean => state.owner !== null || state.agent !== null || state.accepted > 0;
