import type { DomainEvent } from '@rudder/contracts';

/**
 * The little of a conversation that decisions under its lock read, kept on its row and
 * updated in the same transaction as the events (an inline projection of the log): the
 * running turn, and the steers that landed on it and wait for its next step. Reading it is
 * part of taking the lock, so a turn nobody steers pays no extra round trip for steering.
 */
export type ConversationHead = {
  runningTurn: string | null;
  /** Steers that landed on the running turn and are not taken yet, in order. */
  steers: { id: string; text: string }[];
  /** Steers that landed on the running turn so far (taken or waiting): the cap counts these. */
  steersLanded: number;
};

export const idleHead = (): ConversationHead => ({ runningTurn: null, steers: [], steersLanded: 0 });

export function evolveHead(head: ConversationHead, event: DomainEvent): ConversationHead {
  switch (event.type) {
    case 'turn.started':
      return { runningTurn: event.data.turn, steers: [], steersLanded: 0 };
    case 'steer.accepted':
      return event.data.landed
        ? { ...head, steers: [...head.steers, event.data.input], steersLanded: head.steersLanded + 1 }
        : head;
    case 'steer.taken':
      return { ...head, steers: head.steers.filter((s) => s.id !== event.data.input.id) };
    case 'turn.ended':
      // Steers it did not take are answered as turns of their own (the fold queues them).
      return idleHead();
    case 'input.accepted':
    case 'stop.requested':
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
