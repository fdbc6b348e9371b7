import type { DomainEvent } from '@rudder/contracts';

/**
 * What makes each event happen at most once in its conversation, enforced by a unique key:
 * an input is accepted (or rejected) once and delivered once, a steer is decided once and
 * taken at most once, each control (stop, retract, promote) is handled once, a prompt starts
 * one turn, a step's reply and each call's start and result are stored once, a turn ends once.
 */
export function onceKey(event: DomainEvent): string {
  switch (event.type) {
    case 'input.accepted':
      return inputKey(event.data.input.id);
    case 'input.rejected':
      return rejectKey(event.data.input.id);
    case 'input.delivered':
      return `delivered:${event.data.input.id}`;
    case 'input.retracted':
    case 'retract.refused':
      return retractKey(event.data.retract);
    case 'input.discarded':
      return `discard:${event.data.input.id}`;
    case 'promote.refused':
      return promoteKey(event.data.promote);
    case 'steer.accepted':
      return steerAcceptedKey(event.data.input.id);
    case 'steer.taken':
      return `steer-taken:${event.data.input.id}`;
    case 'stop.requested':
      return stopKey(event.data.stop);
    case 'turn.started':
      return turnForKey(event.data.prompt.id);
    case 'model.replied':
      return `reply:${event.data.turn}:${event.data.step}`;
    case 'tool.started':
      return `tool-started:${event.data.turn}:${event.data.step}:${event.data.call.id}`;
    case 'tool.ended':
      return `tool-ended:${event.data.turn}:${event.data.step}:${event.data.callId}`;
    case 'turn.ended':
      return turnEndedKey(event.data.turn);
    default: {
      const never: never = event;
      throw new Error(`no once key for ${JSON.stringify(never)}`);
    }
  }
}

export const inputKey = (inputId: string) => `input:${inputId}`;
export const rejectKey = (inputId: string) => `reject:${inputId}`;
export const steerAcceptedKey = (inputId: string) => `steer-accepted:${inputId}`;
export const stopKey = (stopId: string) => `stop:${stopId}`;
export const retractKey = (retractId: string) => `retract:${retractId}`;
export const promoteKey = (promoteId: string) => `promote:${promoteId}`;
export const turnForKey = (inputId: string) => `turn-for:${inputId}`;
export const turnEndedKey = (turn: string) => `turn-ended:${turn}`;
