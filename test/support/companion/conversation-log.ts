import { eventVersion, inputDigest, type ConversationEvent, type DomainEvent, type ToolCall, type TurnStatus } from '@rudder/contracts';

type Pending = { id: string; kind: 'chat' | 'steer'; text: string };

/**
 * Builds a conversation's events as the worker would publish them: ids unique to the
 * conversation, positions from 1, one second apart from a fixed time.
 */
export function conversationLog(conversation: string) {
  let position = 0;
  const event = (domain: DomainEvent): ConversationEvent => {
    position += 1;
    return {
      v: eventVersion(domain.type),
      id: `${conversation}@${position}`,
      conversation,
      position,
      at: new Date(Date.UTC(2025, 0, 1, 12, 0, 0) + position * 1000).toISOString(),
      ...domain,
    } as ConversationEvent;
  };
  return {
    /** Any event, positioned next. */
    event,
    accepted: (id: string, messages: string | string[], subject = 'alice') => {
      const list = typeof messages === 'string' ? [messages] : messages;
      return event({
        type: 'input.accepted',
        data: { input: { id, kind: 'chat', text: list.join('\n\n'), messages: list, subject, sentAt: '2025-01-01T11:59:59.000Z' } },
      });
    },
    /** A steer accepted into the log (`input.accepted` of kind steer). */
    steer: (id: string, text: string, subject = 'alice') =>
      event({
        type: 'input.accepted',
        data: { input: { id, kind: 'steer', text, messages: [text], subject, sentAt: '2025-01-01T11:59:59.000Z' } },
      }),
    /** The worker's decision on a steer: landed on `turn`, or (turn null) answered as a turn of its own. */
    decided: (steer: { id: string; text: string }, turn: string | null) =>
      event({ type: 'steer.accepted', data: { input: steer, turn, landed: turn !== null } }),
    taken: (turn: string, step: number, steer: { id: string; text: string }) =>
      event({ type: 'steer.taken', data: { turn, step, input: steer } }),
    /** A stop (`mode` stop), or a chat sent with onBusy interrupt/rollback naming itself as the stop. */
    stopRequested: (stop: string, turn: string | null, mode: 'stop' | 'rollback' | 'interrupt' = 'stop') =>
      event({ type: 'stop.requested', data: { stop, turn, mode } }),
    rejected: (input: Pending, code: 'queue_full' | 'precondition_failed' | 'busy', message: string) =>
      event({ type: 'input.rejected', data: { input: { id: input.id, kind: input.kind, digest: inputDigest(input.text) }, code, message } }),
    retracted: (input: Pending, retract: string) => event({ type: 'input.retracted', data: { input, retract } }),
    retractRefused: (retract: string, target: string | null) =>
      event({ type: 'retract.refused', data: { retract, target, code: 'delivered' } }),
    discarded: (input: Pending, stop: string) => event({ type: 'input.discarded', data: { input, stop } }),
    promoteRefused: (promote: string, target: string) =>
      event({ type: 'promote.refused', data: { promote, target, code: 'not_found' } }),
    delivered: (input: { id: string; kind: 'chat' | 'steer' }, turn: string) =>
      event({ type: 'input.delivered', data: { input, turn } }),
    started: (turn: string, prompt: { id: string; text: string }) => event({ type: 'turn.started', data: { turn, prompt } }),
    replied: (turn: string, step: number, content: string, toolCalls: ToolCall[] = []) =>
      event({ type: 'model.replied', data: { turn, step, content, toolCalls } }),
    toolStarted: (turn: string, step: number, call: ToolCall) => event({ type: 'tool.started', data: { turn, step, call } }),
    toolEnded: (turn: string, step: number, callId: string, result: string) =>
      event({ type: 'tool.ended', data: { turn, step, callId, name: 'wait', result, isError: false } }),
    rolledBack: (rollback: string, turns: string[], stopped: string | null = null) =>
      event({ type: 'turns.rolledBack', data: { rollback, asked: { turns: turns.length }, turns, stopped } }),
    ended: (
      turn: string,
      content: string,
      options: { status?: TurnStatus; outcome?: string | null; steered?: { id: string; text: string }[] } = {},
    ) =>
      event({
        type: 'turn.ended',
        data: { turn, status: options.status ?? 'completed', outcome: options.outcome ?? null, content, steered: options.steered ?? [] },
      }),
  };
}

/** A chat answered after one tool call: accepted, started, a reply with a call, the tool, a final reply, ended. */
export function chatWithToolCall(conversation: string, input = 'i1', turn = 't1') {
  const log = conversationLog(conversation);
  const call = { id: 'call-1', name: 'wait', arguments: '{"ms":10}' };
  return [
    log.accepted(input, 'Plan a trip to Lisbon'),
    log.started(turn, { id: input, text: 'Plan a trip to Lisbon' }),
    log.replied(turn, 0, 'Let me check the weather.', [call]),
    log.toolStarted(turn, 0, call),
    log.toolEnded(turn, 0, 'call-1', 'waited 10 ms'),
    log.replied(turn, 1, 'Lisbon is sunny: go in May.'),
    log.ended(turn, 'Let me check the weather.\n\nLisbon is sunny: go in May.'),
  ];
}
