import type { DomainEvent } from '@rudder/contracts';

/**
 * What makes each event happen at most once in its conversation, enforced by the store's
 * unique key on (conversation, once key): the conversation is opened once; an input is
 * accepted (or rejected) once and delivered once; a steer is decided once and taken at most
 * once; each control (stop, retract, promote) is handled once; a prompt starts one turn; a
 * step's reply and each call's start and result are stored once; a turn ends once.
 */
export function onceKey(event: DomainEvent): string {
  switch (event.type) {
    case 'conversation.opened':
      return 'opened';
    case 'input.accepted':
      return receiptKey.input(event.data.input.id);
    case 'input.rejected':
      return receiptKey.rejected(event.data.input.id);
    case 'guard.failed':
      // One per try, and no receipt (see receiptKeys): the id stays open for the try after it.
      return `guard-failed:${event.data.input.id}:${event.data.attempt}`;
    case 'input.delivered':
      return `delivered:${event.data.input.id}`;
    case 'input.retracted':
    case 'retract.refused':
      return receiptKey.retract(event.data.retract);
    case 'input.discarded':
      return `discard:${event.data.input.id}`;
    case 'promote.refused':
      return receiptKey.promote(event.data.promote);
    case 'steer.accepted':
      return receiptKey.steerDecided(event.data.input.id);
    case 'steer.taken':
      return `steer-taken:${event.data.input.id}`;
    case 'stop.requested':
    case 'stop.refused':
      return receiptKey.stop(event.data.stop);
    case 'access.granted':
    case 'grant.refused':
      return receiptKey.grant(event.data.grant);
    case 'turn.started':
      return `turn-for:${event.data.prompt.id}`;
    case 'model.replied':
      return `reply:${event.data.turn}:${event.data.step}`;
    case 'tool.started':
      return `tool-started:${event.data.turn}:${event.data.step}:${event.data.call.id}`;
    case 'tool.ended':
      return `tool-ended:${event.data.turn}:${event.data.step}:${event.data.callId}`;
    case 'todos.updated':
      // A call changes the plan once, with its result; a rolled-back turn's changes are undone once, with its end.
      return event.data.callId === null ? `todos-undone:${event.data.turn}` : `todos:${event.data.turn}:${event.data.step}:${event.data.callId}`;
    case 'turn.ended':
      return `turn-ended:${event.data.turn}`;
    case 'approval.requested':
      return `approval:${event.data.turn}:${event.data.step}:${event.data.call.id}`;
    case 'approval.decided':
      // The state makes a call decided once (it leaves `awaiting`); a person's decision is its input's receipt.
      return event.data.input === null ? `approval-decided:${event.data.approval}` : receiptKey.approvalDecision(event.data.input);
    case 'approval.refused':
      return receiptKey.approvalDecision(event.data.input);
    case 'history.compacted':
      // One summary through a turn: a compaction redone after a crash finds it stored.
      return `compacted:${event.data.through.turn}`;
    default: {
      const never: never = event;
      throw new Error(`no once key for ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The once keys an input's receipts are stored under, by the input id each names: each input
 * kind's receipt keys (`receiptKeys` of its rules in `inputs/`) are made of these.
 */
export const receiptKey = {
  input: (id: string) => `input:${id}`,
  rejected: (id: string) => `reject:${id}`,
  steerDecided: (id: string) => `steer-accepted:${id}`,
  stop: (id: string) => `stop:${id}`,
  retract: (id: string) => `retract:${id}`,
  promote: (id: string) => `promote:${id}`,
  grant: (id: string) => `grant:${id}`,
  approvalDecision: (id: string) => `approval-decision:${id}`,
};
