import type { ConversationEvent, InputState } from '@rudder/contracts';
import { initialState, parseState } from '@rudder/conversation';
import type { ConversationRow, InputRow, TranscriptRow, TurnRow } from '../read-models/entities';
import { foldState } from './conversation-state';

/**
 * The pure fold of a batch of events over the read models' rows (`read-models/entities.ts`).
 * `fold-events.ts` loads the rows a batch touches, calls `foldRows`, and writes back what changed;
 * this file does no I/O, so the projection rules are tested without a database. The queue and
 * steering rules are not here: a conversation's status is its `ConversationState`, folded by the
 * worker's own `evolve` (`foldState`).
 */

/** The rows a batch may read or change, as they were before it. */
export type Rows = { conversations: ConversationRow[]; inputs: InputRow[]; turns: TurnRow[] };

/** What a batch changed: rows to upsert whole, and transcript rows to add. */
export type Changes = Rows & { transcript: TranscriptRow[] };

/** Which rows folding these events may read. */
export type Needed = {
  conversations: string[];
  inputs: { conversation: string; id: string }[];
  turns: { conversation: string; id: string }[];
};

export function rowsNeeded(events: readonly ConversationEvent[]): Needed {
  const conversations = new Set<string>();
  const inputs = new Map<string, { conversation: string; id: string }>();
  const turns = new Map<string, { conversation: string; id: string }>();
  const input = (conversation: string, id: string) => inputs.set(rowKey(conversation, id), { conversation, id });
  const turn = (conversation: string, id: string) => turns.set(rowKey(conversation, id), { conversation, id });
  for (const event of events) {
    const c = event.conversation;
    conversations.add(c);
    switch (event.type) {
      case 'conversation.opened':
      case 'access.granted':
      case 'grant.refused':
      case 'stop.refused':
        break;
      case 'input.accepted':
        input(c, event.data.input.id);
        break;
      case 'turn.started':
        input(c, event.data.prompt.id);
        turn(c, event.data.turn);
        break;
      case 'steer.accepted':
        input(c, event.data.input.id);
        break;
      case 'steer.taken':
        input(c, event.data.input.id);
        turn(c, event.data.turn);
        break;
      case 'model.replied':
        turn(c, event.data.turn);
        break;
      case 'turn.ended':
        turn(c, event.data.turn);
        for (const s of event.data.steered) input(c, s.id);
        break;
      case 'input.rejected':
      case 'input.retracted':
      case 'input.discarded':
      case 'input.delivered':
        input(c, event.data.input.id);
        break;
      case 'stop.requested':
      case 'retract.refused':
      case 'promote.refused':
      case 'guard.failed':
      case 'tool.started':
      case 'tool.ended':
        break;
      default:
        return unreachable(event);
    }
  }
  return { conversations: [...conversations], inputs: [...inputs.values()], turns: [...turns.values()] };
}

/**
 * Folds new events (each applied once, in position order within a conversation, every one of a
 * type the contract knows) over the rows they touch. Each event evolves its conversation's
 * state (`foldState`: owner, agent, grants, the running turn, steering, the queue, the last
 * input), and the rows hold what the state does not:
 * - the conversation's position (its last event's) and when its running turn started.
 * - `input.accepted`: a pending input.
 * - `input.rejected`: an input refused (and answered by the refusal): recorded as `rejected`
 *   with its code, message and text's digest (no text); it never was pending and does not
 *   change owner or `lastInputId`.
 * - `input.retracted`, `input.discarded`: a pending input taken back, or dropped by a stop with
 *   discardPending: it leaves status and is never answered.
 * - `input.delivered`: the input reached a turn (as `turn.started` / `steer.taken` already say).
 * - `steer.accepted`: the worker's decision (turn, landed) is recorded on the steer's input row
 *   (the answer to the same steer sent again); the steer stays pending.
 * - `steer.taken`: the steer is delivered and enters the transcript as a user row under its own
 *   id, `steered: true`, at the event's position (between the answers before and after it);
 *   the running turn's `steered` grows by it.
 * - `turn.started`: the turn runs; its prompt input is delivered and enters the transcript, one
 *   user row per message (`<inputId>` for one message, `<inputId>#<n>` from 1 for several).
 *   A steer no turn took (landed false, or its turn stopped first) is delivered this way too.
 * - `model.replied` with content: an assistant row `<turn>/<step>`; the running turn's content is
 *   its replies so far joined with a blank line.
 * - `turn.ended`: the turn's final status, outcome, content and steered messages.
 * - `conversation.opened`, `access.granted`, `stop.requested`: the state only.
 * - `retract.refused`, `promote.refused`, `tool.*`: copied for replay only; so is `guard.failed`
 *   (the guard failed, nothing was decided): its input gets no row, so the same id sent again
 *   is not answered from here but guarded again.
 * Only a pending input changes state, and the first final state stands. A repeated
 * `turn.started` for a known turn, or an input accepted (or rejected) twice under other event
 * ids, changes nothing.
 */
export function foldRows(before: Rows, events: readonly ConversationEvent[]): Changes {
  const conversations = new Map(before.conversations.map((r) => [r.key, { ...r, state: parseState(r.state) }]));
  const inputs = new Map(before.inputs.map((r) => [rowKey(r.conversation, r.id), { ...r }]));
  const turns = new Map(before.turns.map((r) => [rowKey(r.conversation, r.id), { ...r, steered: [...r.steered] }]));
  const changed = { conversations: new Set<string>(), inputs: new Set<string>(), turns: new Set<string>() };
  const transcript: TranscriptRow[] = [];

  const conversation = (key: string): ConversationRow => {
    let row = conversations.get(key);
    if (!row) {
      row = { key, position: 0, state: initialState(), runningStartedAt: null };
      conversations.set(key, row);
      changed.conversations.add(key);
    }
    return row;
  };
  /** A pending input's final state: delivered, retracted or discarded. */
  const settle = (c: string, id: string, state: InputState) => {
    const row = inputs.get(rowKey(c, id));
    if (row && row.state === 'pending') {
      row.state = state;
      changed.inputs.add(rowKey(c, id));
    }
  };
  const deliver = (c: string, id: string) => settle(c, id, 'delivered');

  for (const event of events) {
    const c = event.conversation;
    const conv = conversation(c);
    conv.position = Math.max(conv.position, event.position);
    const was = conv.state.runningTurn;
    conv.state = foldState(conv.state, event);
    if (conv.state.runningTurn !== was) conv.runningStartedAt = conv.state.runningTurn === null ? null : event.at;
    changed.conversations.add(c);
    switch (event.type) {
      case 'conversation.opened':
      case 'access.granted':
      case 'stop.requested':
      case 'grant.refused':
      case 'stop.refused':
        break;
      case 'input.accepted': {
        const { input } = event.data;
        const key = rowKey(c, input.id);
        if (inputs.has(key)) break;
        inputs.set(key, {
          conversation: c,
          id: input.id,
          kind: input.kind,
          text: input.text,
          digest: null,
          messages: input.messages.length > 0 ? input.messages : [input.text],
          subject: input.subject,
          acceptedAt: event.at,
          position: event.position,
          state: 'pending',
          rejectionCode: null,
          rejectionMessage: null,
          steerTurn: null,
          steerLanded: null,
        });
        changed.inputs.add(key);
        break;
      }
      case 'steer.accepted': {
        const { input, turn, landed } = event.data;
        const key = rowKey(c, input.id);
        const row = inputs.get(key);
        // The first decision stands: the gateway answers a repeated steer id with it.
        if (!row || row.steerLanded !== null) break;
        row.steerTurn = turn;
        row.steerLanded = landed;
        changed.inputs.add(key);
        break;
      }
      case 'steer.taken': {
        const { turn, input: steer } = event.data;
        const input = inputs.get(rowKey(c, steer.id));
        deliver(c, steer.id);
        transcript.push({
          conversation: c,
          position: event.position,
          part: 0,
          id: steer.id,
          role: 'user',
          text: steer.text,
          turn,
          steered: true,
          at: input ? input.acceptedAt : event.at,
        });
        const row = turns.get(rowKey(c, turn));
        if (row && row.status === 'running' && !row.steered.some((s) => s.id === steer.id)) {
          row.steered.push({ id: steer.id, text: steer.text });
          changed.turns.add(rowKey(c, turn));
        }
        break;
      }
      case 'turn.started': {
        const { turn, prompt } = event.data;
        const key = rowKey(c, turn);
        if (turns.has(key)) break;
        turns.set(key, {
          conversation: c,
          id: turn,
          promptId: prompt.id,
          promptText: prompt.text,
          status: 'running',
          outcome: null,
          content: '',
          steered: [],
          agent: conv.state.agent,
          usage: null,
          startedAt: event.at,
          endedAt: null,
        });
        changed.turns.add(key);
        const input = inputs.get(rowKey(c, prompt.id));
        deliver(c, prompt.id);
        // A prompt the companion never saw accepted (it came another way) is shown as its text.
        const messages = input?.messages ?? [prompt.text];
        messages.forEach((text, i) =>
          transcript.push({
            conversation: c,
            position: event.position,
            part: i,
            id: messages.length === 1 ? prompt.id : `${prompt.id}#${i + 1}`,
            role: 'user',
            text,
            turn,
            steered: false,
            at: input ? input.acceptedAt : event.at,
          }),
        );
        break;
      }
      case 'model.replied': {
        const { turn, step, content, usage } = event.data;
        const running = turns.get(rowKey(c, turn));
        if (usage && running && running.status === 'running') {
          running.usage = {
            promptTokens: (running.usage?.promptTokens ?? 0) + usage.promptTokens,
            completionTokens: (running.usage?.completionTokens ?? 0) + usage.completionTokens,
            totalTokens: (running.usage?.totalTokens ?? 0) + usage.totalTokens,
          };
          changed.turns.add(rowKey(c, turn));
        }
        if (content === '') break;
        transcript.push({
          conversation: c,
          position: event.position,
          part: 0,
          id: `${turn}/${step}`,
          role: 'assistant',
          text: content,
          turn,
          steered: false,
          at: event.at,
        });
        const row = turns.get(rowKey(c, turn));
        if (row && row.status === 'running') {
          row.content = row.content === '' ? content : `${row.content}\n\n${content}`;
          changed.turns.add(rowKey(c, turn));
        }
        break;
      }
      case 'turn.ended': {
        const { turn, status, outcome, content, steered, usage } = event.data;
        const row = turns.get(rowKey(c, turn));
        if (row) {
          Object.assign(row, { status, outcome, content, steered, usage: usage ?? row.usage, endedAt: event.at });
          changed.turns.add(rowKey(c, turn));
        }
        for (const s of steered) deliver(c, s.id);
        break;
      }
      case 'input.rejected': {
        const { input, code, message } = event.data;
        const key = rowKey(c, input.id);
        if (inputs.has(key)) break;
        inputs.set(key, {
          conversation: c,
          id: input.id,
          kind: input.kind,
          // A refusal keeps no text (#31 item 10), only its digest.
          text: '',
          digest: input.digest,
          messages: null,
          subject: null,
          acceptedAt: event.at,
          position: event.position,
          state: 'rejected',
          rejectionCode: code,
          rejectionMessage: message,
          steerTurn: null,
          steerLanded: null,
        });
        changed.inputs.add(key);
        break;
      }
      case 'input.retracted':
        settle(c, event.data.input.id, 'retracted');
        break;
      case 'input.discarded':
        settle(c, event.data.input.id, 'discarded');
        break;
      case 'input.delivered':
        deliver(c, event.data.input.id);
        break;
      case 'retract.refused':
      case 'promote.refused':
      case 'guard.failed':
      case 'tool.started':
      case 'tool.ended':
        break;
      default:
        return unreachable(event);
    }
  }

  const pick = <T>(rows: Map<string, T>, keys: Set<string>): T[] => [...keys].map((k) => rows.get(k) as T);
  return {
    conversations: pick(conversations, changed.conversations),
    inputs: pick(inputs, changed.inputs),
    turns: pick(turns, changed.turns),
    transcript,
  };
}

const rowKey = (conversation: string, id: string): string => `${conversation}\u0000${id}`;

function unreachable(event: never): never {
  throw new Error(`unknown event type: ${JSON.stringify(event)}`);
}
