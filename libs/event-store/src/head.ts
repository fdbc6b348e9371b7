import type { DomainEvent } from '@rudder/contracts';

/** `seq` orders what waits: the acceptance order, with 0 for an input that asked to run next. */
export type PendingInput = { id: string; kind: 'chat' | 'steer'; text: string; seq: number };
export type Ending = 'stop' | 'rollback' | 'interrupt';

/**
 * The little of a conversation that decisions under its lock read, kept on its row and
 * updated in the same transaction as the events (an inline projection of the log): the
 * running turn, what waits for it, and what waits behind it. Reading it is part of taking the
 * lock, so a turn nobody steers pays no extra round trip for any of this. It is bounded by the
 * queue bounds, so it stays small.
 */
export type ConversationHead = {
  runningTurn: string | null;
  /** How the running turn was asked to end, if it was. */
  ending: Ending | null;
  /** Steers that landed on the running turn and are not taken yet, in order. */
  steers: PendingInput[];
  /** Steers that landed on the running turn so far (taken or waiting): the cap counts these. */
  steersLanded: number;
  /** Inputs waiting to be turns of their own, in the order they run. */
  queue: PendingInput[];
  /** The last accepted input: `ifLastInputId` compares with it. */
  lastInputId: string | null;
  /** Inputs accepted so far: the next one's `seq`. */
  accepted: number;
};

export const idleHead = (): ConversationHead => ({
  runningTurn: null,
  ending: null,
  steers: [],
  steersLanded: 0,
  queue: [],
  lastInputId: null,
  accepted: 0,
});

const without = (inputs: PendingInput[], id: string) => inputs.filter((i) => i.id !== id);
const inOrder = (inputs: PendingInput[]) => [...inputs].sort((a, b) => a.seq - b.seq);

export function evolveHead(head: ConversationHead, event: DomainEvent): ConversationHead {
  switch (event.type) {
    case 'input.accepted': {
      const { id, kind, text } = event.data.input;
      const accepted = head.accepted + 1;
      // A steer joins the queue or the running turn when it is decided (next event, same transaction).
      return { ...head, lastInputId: id, accepted, queue: kind === 'chat' ? [...head.queue, { id, kind, text, seq: accepted }] : head.queue };
    }
    case 'steer.accepted': {
      const { input, landed } = event.data;
      const promoted = head.queue.find((i) => i.id === input.id); // a follow-up promoted to a steer
      const steer: PendingInput = { id: input.id, kind: 'steer', text: input.text, seq: promoted?.seq ?? head.accepted };
      if (landed) {
        return { ...head, queue: without(head.queue, input.id), steers: [...head.steers, steer], steersLanded: head.steersLanded + 1 };
      }
      return promoted ? head : { ...head, queue: inOrder([...head.queue, steer]) };
    }
    case 'steer.taken':
      return { ...head, steers: without(head.steers, event.data.input.id) };
    case 'turn.started':
      return { ...head, runningTurn: event.data.turn, ending: null, steers: [], steersLanded: 0, queue: without(head.queue, event.data.prompt.id) };
    case 'stop.requested': {
      if (event.data.turn === null || event.data.turn !== head.runningTurn) return head;
      // The input that asked to interrupt or roll back the turn runs next.
      const asker = head.queue.find((i) => i.id === event.data.stop);
      const queue = asker ? [{ ...asker, seq: 0 }, ...without(head.queue, asker.id)] : head.queue;
      return { ...head, ending: event.data.mode, queue };
    }
    case 'turn.ended':
      // Steers it did not take are answered as turns of their own, in the order they were sent.
      return { ...idleHead(), queue: inOrder([...head.queue, ...head.steers]), lastInputId: head.lastInputId, accepted: head.accepted };
    case 'input.retracted':
    case 'input.discarded':
      return { ...head, queue: without(head.queue, event.data.input.id), steers: without(head.steers, event.data.input.id) };
    case 'input.rejected':
    case 'retract.refused':
    case 'promote.refused':
    case 'input.delivered':
    case 'model.replied':
    case 'tool.started':
    case 'tool.ended':
      return head;
    default: {
      const never: never = event;
      throw new Error(`unknown event ${JSON.stringify(never)}`);
    }
  }
}

/** A head as stored (jsonb); fields missing in rows written by older code take their idle value. */
export const parseHead = (stored: Partial<ConversationHead> | null): ConversationHead => ({ ...idleHead(), ...stored });
