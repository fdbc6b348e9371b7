import type { Usage } from '@rudder/contracts';
import type { ConversationState } from '@rudder/conversation';
import { closeApprovals } from './fold-approvals';
import { settle } from './fold-inputs';
import type { Folds, Of, RowSet } from './row-set';

/**
 * The turns (`TurnRow`) and the transcript's user and assistant rows.
 * - `turn.started`: the turn runs; its prompt input is delivered and enters the transcript, one
 *   user row per message (`<inputId>` for one message, `<inputId>#<n>` from 1 for several).
 *   A steer no turn took (landed false, or its turn stopped first) is delivered this way too.
 * - `steer.taken`: the steer is delivered and enters the transcript as a user row under its own
 *   id, `steered: true`, at the event's position (between the answers before and after it);
 *   the running turn's `steered` grows by it.
 * - `model.replied` with content: an assistant row `<turn>/<step>`; the running turn's content is
 *   its replies so far joined with a blank line.
 * - `agent.changed`: the turn that handed the conversation on is answered by the agent it was
 *   handed to (its `agent` is the one that answers it last).
 * - `answer.rejected`: its usage counts in the turn's; the rejected answer is shown to no one.
 *   Blocked (`reask` null): the block's message is the turn's answer, an assistant row
 *   `<turn>/<step>` as a reply's.
 * - `turn.ended`: the turn's final status, outcome, content and steered messages, whether
 *   it wound down, and whether it was rolled back (stopped as a rollback); every approval of the
 *   turn still awaiting is closed unrun.
 * - `turns.rolledBack`: each turn it names is rolled back (its transcript rows stay, hidden
 *   from the transcript unless asked for).
 * - `conversation.forked`: the source's turns the fork copied enter the fork's transcript, at
 *   the event's position (before the fork's own turns), one row per message, each marked with
 *   its source conversation and turn (`forkedFrom`) and with no turn of the fork's (their turns
 *   are the source's: the fork's `turns` has its own only). Ids are the fork's own:
 *   `forked/<turn>/<n>`, n from 0 within the turn.
 * A repeated `turn.started` for a known turn changes nothing.
 */
export const TURN_FOLDS: Folds = {
  'turn.started': { reads: (data) => ({ turns: [data.turn] }), fold: (rows, event, conversation, before) => startTurn(rows, event, conversation.state.agent, before) },
  'steer.taken': { reads: (data) => ({ turns: [data.turn] }), fold: takeSteer },
  'model.replied': { reads: (data) => ({ turns: [data.turn] }), fold: reply },
  'agent.changed': { reads: (data) => ({ turns: [data.turn] }), fold: handOff },
  'answer.rejected': { reads: (data) => ({ turns: [data.turn] }), fold: rejectAnswer },
  'turn.ended': { reads: (data) => ({ turns: [data.turn], approvalsOf: [data.turn] }), fold: (rows, event, _conversation, before) => endTurn(rows, event, before) },
  'turns.rolledBack': { reads: (data) => ({ turns: data.turns }), fold: rollBack },
  'conversation.forked': { fold: copyForkedTurns },
};

function startTurn(rows: RowSet, event: Of<'turn.started'>, agent: string | null, before: ConversationState): void {
  const c = event.conversation;
  const { turn, prompt } = event.data;
  if (rows.turn(c, turn)) return;
  rows.putTurn({
    conversation: c,
    id: turn,
    promptId: prompt.id,
    promptText: prompt.text,
    status: 'running',
    outcome: null,
    content: '',
    steered: [],
    agent,
    usage: null,
    woundDown: false,
    rolledBack: false,
    startedAt: event.at,
    endedAt: null,
  });
  const input = rows.input(c, prompt.id);
  settle(rows, c, prompt.id, 'delivered');
  // The prompt's messages as the state held them when the turn started: what the worker's fold
  // gives the model (`evolveConversation`). A prompt the state did not hold is shown as its
  // input's messages, or (it came another way) as its text.
  const messages = before.queue.find((p) => p.id === prompt.id)?.messages ?? input?.messages ?? [prompt.text];
  messages.forEach((text, i) =>
    rows.addTranscript({
      conversation: c,
      position: event.position,
      part: i,
      id: messages.length === 1 ? prompt.id : `${prompt.id}#${i + 1}`,
      role: 'user',
      text,
      turn,
      steered: false,
      at: input ? input.acceptedAt : event.at,
      forkedFrom: null,
    }),
  );
}

function takeSteer(rows: RowSet, event: Of<'steer.taken'>): void {
  const c = event.conversation;
  const { turn, input: steer } = event.data;
  const input = rows.input(c, steer.id);
  settle(rows, c, steer.id, 'delivered');
  rows.addTranscript({
    conversation: c,
    position: event.position,
    part: 0,
    id: steer.id,
    role: 'user',
    text: steer.text,
    turn,
    steered: true,
    at: input ? input.acceptedAt : event.at,
    forkedFrom: null,
  });
  const row = rows.turn(c, turn);
  if (row && row.status === 'running' && !row.steered.some((s) => s.id === steer.id)) {
    row.steered.push({ id: steer.id, text: steer.text });
    rows.touchTurn(row);
  }
}

function handOff(rows: RowSet, event: Of<'agent.changed'>): void {
  // A rollback's hand back names the first turn it took back, which no agent answers after it.
  if (event.data.rollback !== undefined) return;
  const running = rows.turn(event.conversation, event.data.turn);
  if (!running || running.status !== 'running') return;
  running.agent = event.data.to;
  rows.touchTurn(running);
}

/** A reply's usage (a rejected one's too) counts in its running turn's. */
function addUsage(rows: RowSet, c: string, { turn, usage }: { turn: string; usage?: Usage }): void {
  const running = rows.turn(c, turn);
  if (usage && running && running.status === 'running') {
    running.usage = {
      promptTokens: (running.usage?.promptTokens ?? 0) + usage.promptTokens,
      completionTokens: (running.usage?.completionTokens ?? 0) + usage.completionTokens,
      totalTokens: (running.usage?.totalTokens ?? 0) + usage.totalTokens,
    };
    rows.touchTurn(running);
  }
}

function reply(rows: RowSet, event: Of<'model.replied'>): void {
  addUsage(rows, event.conversation, event.data);
  addAnswer(rows, event, event.data.content);
}

function rejectAnswer(rows: RowSet, event: Of<'answer.rejected'>): void {
  addUsage(rows, event.conversation, event.data);
  if (event.data.reask === null) addAnswer(rows, event, event.data.feedback);
}

/** An answer of a step: its assistant row, and the running turn's content so far. */
function addAnswer(rows: RowSet, event: Of<'model.replied' | 'answer.rejected'>, content: string): void {
  const c = event.conversation;
  const { turn, step } = event.data;
  if (content === '') return;
  const running = rows.turn(c, turn);
  rows.addTranscript({ conversation: c, position: event.position, part: 0, id: `${turn}/${step}`, role: 'assistant', text: content, turn, steered: false, at: event.at, forkedFrom: null });
  if (running && running.status === 'running') {
    running.content = running.content === '' ? content : `${running.content}\n\n${content}`;
    rows.touchTurn(running);
  }
}

function endTurn(rows: RowSet, event: Of<'turn.ended'>, before: ConversationState): void {
  const c = event.conversation;
  const { turn, status, outcome, content, steered, usage, woundDown = false } = event.data;
  const row = rows.turn(c, turn);
  if (row) {
    // A turn stopped as a rollback (a chat's onBusy rollback, a rollback's stopRunning) ends rolled back.
    const rolledBack = row.rolledBack || (before.runningTurn === turn && before.ending === 'rollback');
    Object.assign(row, { status, outcome, content, steered, usage: usage ?? row.usage, woundDown, rolledBack, endedAt: event.at });
    rows.touchTurn(row);
  }
  for (const s of steered) settle(rows, c, s.id, 'delivered');
  closeApprovals(rows, c, turn, () => true);
}

/** The turns a rollback took back say so; their transcript rows stay, hidden unless asked for. */
function rollBack(rows: RowSet, event: Of<'turns.rolledBack'>): void {
  for (const turn of event.data.turns) {
    const row = rows.turn(event.conversation, turn);
    if (row && !row.rolledBack) {
      row.rolledBack = true;
      rows.touchTurn(row);
    }
  }
}

/**
 * The turns a fork copied, shown in its transcript as the fork's model requests carry them: each
 * turn's user messages (its prompt and what was steered to it: the copy does not tell them
 * apart, so none is marked steered), then its answers.
 */
function copyForkedTurns(rows: RowSet, event: Of<'conversation.forked'>): void {
  const { from, history } = event.data;
  let part = 0;
  for (const { turn, messages } of history) {
    messages.forEach(({ role, content }, n) =>
      rows.addTranscript({
        conversation: event.conversation,
        position: event.position,
        part: part++,
        id: `forked/${turn}/${n}`,
        role,
        text: content,
        turn: null,
        steered: false,
        at: event.at,
        forkedFrom: { key: from, turn },
      }),
    );
  }
}
