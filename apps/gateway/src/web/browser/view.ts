import { approvalCard, type Decide } from './approval-card';
import type { Conversation, Edit } from './conversation';
import { byId, el } from './dom';
import { short } from './labels';

/** What a click on the page asks for; the page (main.ts) runs it. */
export type Actions = {
  /** A suggested next message clicked: sent as an ordinary chat. */
  suggestion(c: Conversation, text: string): void;
  retract(c: Conversation, input: { id: string; text: string }): void;
  promote(c: Conversation, input: { id: string; text: string }): void;
  decide(c: Conversation, ...decision: Parameters<Decide>): void;
  /** Opens the box to edit a waiting message in place; `cancelEdit` closes it, `edit` sends its text. */
  startEdit(c: Conversation, input: Waiting): void;
  cancelEdit(c: Conversation, id: string): void;
  edit(c: Conversation, id: string, text: string): void;
  /** Moves a waiting follow-up just before `before` (null: to the end of the queue). */
  move(c: Conversation, id: string, before: string | null): void;
  /** Rolls back the last answer, `turn`, if it is still the last one. */
  undo(c: Conversation, turn: string): void;
  /** Forks the conversation at `turn` (an ended one) into a new one, and opens it. */
  branch(c: Conversation, turn: string): void;
  /** Cancels one of the conversation's schedules. */
  cancelSchedule(c: Conversation, schedule: { id: string; text: string }): void;
};

/** A message that waits, as the pending list shows it: in `steering` (for the running turn) or in the queue (`queued`: a turn of its own). */
export type Waiting = { id: string; text: string; kind: 'chat' | 'steer'; revision: number; queued: boolean };

/** Shows the open conversation: its transcript with the approval cards, the plan, the recap, the suggestions, the turn's state and what waits. */
export function renderConversation(c: Conversation, actions: Actions) {
  // A render moves the approval cards and the edit boxes (a text being typed, the focus in it) and makes the
  // rows' buttons anew: put the focus back.
  const focused = document.activeElement;
  const selection = focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement ? [focused.selectionStart, focused.selectionEnd] : null;
  const control = controlOf(focused);
  byId('transcript').replaceChildren(
    ...transcriptRows(c, actions),
    ...[...c.live.values()].filter(Boolean).map((text) => el('li', { class: 'message assistant live', 'data-role': 'live' }, el('span', { class: 'text' }, text))),
  );
  byId('plan-panel').hidden = c.todos.length === 0;
  byId('plan').replaceChildren(
    ...c.todos.map((item) =>
      el(
        'li',
        { 'data-n': String(item.n), 'data-status': item.status },
        el('span', { class: 'mark', title: item.status.replace('_', ' ') }, item.status === 'done' ? '✔' : item.status === 'in_progress' ? '▶' : '○'),
        el('span', { class: 'n' }, `${item.n}.`),
        el('span', { class: 'text' }, item.text),
      ),
    ),
  );
  byId('schedules-panel').hidden = c.schedules.length === 0;
  byId('schedules').replaceChildren(
    ...c.schedules.map((schedule) => {
      const cancel = el('button', { type: 'button', 'data-action': 'cancel-schedule' }, 'Cancel');
      cancel.addEventListener('click', () => actions.cancelSchedule(c, schedule));
      const when = schedule.every ? `every ${schedule.every}${schedule.tz ? ` (${schedule.tz})` : ''}, next ${localTime(schedule.next)}` : `at ${localTime(schedule.next)}`;
      return el('li', { 'data-schedule': schedule.id }, el('span', { class: 'text' }, schedule.text), el('span', { class: 'when' }, when), cancel);
    }),
  );
  byId('recap').hidden = c.recap === '';
  byId('recap').replaceChildren(el('b', {}, 'Where you were:'), c.recap);
  byId('suggestions').replaceChildren(
    ...c.suggestions.map((text) => {
      const button = el('button', { type: 'button', 'data-action': 'suggestion' }, text);
      button.addEventListener('click', () => actions.suggestion(c, text));
      return button;
    }),
  );
  // The agent that answers now: a handoff (`agent.changed`) makes the page read the status again.
  byId('agent').textContent = c.status?.agent ? `answered by ${c.status.agent}` : '';
  const waiting = [...c.approvals.values()].filter((a) => a.outcome === null && a.turn === c.running).map((a) => a.tool);
  byId('turn-state').textContent = c.running
    ? `turn ${short(c.running)} ${waiting.length > 0 ? `waiting for your approval: ${waiting.join(', ')}` : `running${c.tool ? `: tool ${c.tool}` : ''}`}`
    : `no turn running${c.ended ? ` (the last one ${c.ended})` : ''}`;
  byId('turn-state').dataset.running = String(c.running !== null);
  // Made anew only when what it shows changed: a row replaced between a press and its release
  // would lose the click (the status is read again on every event).
  const list = byId('pending');
  const shown = pendingShown(c);
  if (list.dataset.shown !== shown) {
    const rows = pendingRows(c, actions);
    list.replaceChildren(...(rows.length === 0 ? [el('li', { class: 'empty' }, 'nothing waits')] : rows));
    list.dataset.shown = shown;
  }
  if (focused instanceof HTMLElement && focused.isConnected && document.activeElement !== focused) {
    focused.focus({ preventScroll: true });
    if (selection && (focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement)) focused.setSelectionRange(selection[0], selection[1]);
  } else if (control && !focused?.isConnected) {
    // A control of a row made anew (Move up, Edit…): the focus goes to the same control of the same message, else to the message's first one.
    const row = document.querySelector(`[data-id="${CSS.escape(control.id)}"]`);
    (row?.querySelector<HTMLElement>(`[data-action="${control.action}"]`) ?? row?.querySelector<HTMLElement>('[data-action]'))?.focus({ preventScroll: true });
  }
}

/** The control that has the focus, as the message it belongs to (`data-id`) and what it does (`data-action`). */
function controlOf(focused: Element | null): { id: string; action: string } | null {
  const action = focused instanceof HTMLElement ? focused.dataset.action : undefined;
  const id = focused?.closest<HTMLElement>('[data-id]')?.dataset.id;
  return action && id ? { id, action } : null;
}

/** Everything the pending list shows of a conversation, as one string (the list is made anew when it changes). */
const pendingShown = (c: Conversation): string =>
  JSON.stringify([c.key, c.status?.steering ?? [], c.status?.queue ?? [], [...c.edits].map(([id, edit]) => [id, edit.text, edit.kind, edit.sending]), [...c.notes]]);

/**
 * What waits, each with its controls: Edit (in place), Retract; on a follow-up of the queue,
 * Promote, and its place changed by a drag or by Move up / Move down. A message being edited
 * keeps its box after it stopped waiting (delivered meanwhile): Save then says what became of it.
 */
function pendingRows(c: Conversation, actions: Actions): HTMLElement[] {
  const queue = c.status?.queue ?? [];
  const pending: Waiting[] = [
    ...(c.status?.steering ?? []).map((input) => ({ ...input, kind: 'steer' as const, queued: false })),
    ...queue.map((input) => ({ ...input, queued: true })),
  ];
  const gone = [...c.edits].filter(([id]) => !pending.some((input) => input.id === id));
  pending.push(...gone.map(([id, edit]) => ({ id, text: edit.text, kind: edit.kind, revision: 0, queued: false })));
  return pending.map((input) => {
    const row = el('li', { class: 'pending', 'data-kind': input.kind, 'data-id': input.id, 'data-queued': String(input.queued) });
    const waits = input.queued ? (input.kind === 'chat' ? 'follow-up' : 'steer, its own turn') : gone.some(([id]) => id === input.id) ? 'no longer waiting' : 'steering the running turn';
    row.append(el('span', { class: 'kind' }, `${waits}${input.revision > 0 ? ' · edited' : ''}`));
    const edit = c.edits.get(input.id);
    row.append(...(edit ? editBox(c, input, edit, actions) : [el('span', { class: 'text' }, input.text), button('edit', 'Edit', () => actions.startEdit(c, input))]));
    const note = c.notes.get(input.id);
    if (note) row.append(el('span', { class: 'note', role: 'status' }, note));
    row.append(button('retract', 'Retract', () => actions.retract(c, input)));
    if (input.queued && input.kind === 'chat') {
      row.append(button('promote', 'Promote', () => actions.promote(c, input)));
      const at = queue.findIndex((q) => q.id === input.id);
      if (at > 0) row.append(button('move-up', '▲', () => actions.move(c, input.id, queue[at - 1].id), { 'aria-label': 'Move up', title: 'Move up' }));
      if (at < queue.length - 1) row.append(button('move-down', '▼', () => actions.move(c, input.id, queue[at + 2]?.id ?? null), { 'aria-label': 'Move down', title: 'Move down' }));
      draggable(row, input.id);
    }
    if (input.queued) dropTarget(c, row, input.id, actions);
    return row;
  });
}

/** The box that edits a waiting message in place: its text, Save (or Ctrl+Enter) and Cancel (or Escape). */
function editBox(c: Conversation, input: Waiting, edit: Edit, actions: Actions): HTMLElement[] {
  const box = (edit.box ??= el('textarea', { class: 'edit', 'aria-label': `new text of ${input.text}` }, input.text) as HTMLTextAreaElement);
  const save = () => actions.edit(c, input.id, box.value.trim());
  box.onkeydown = (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) save();
    if (event.key === 'Escape') actions.cancelEdit(c, input.id);
  };
  const saving = button('save', 'Save', save);
  const cancel = button('cancel', 'Cancel', () => actions.cancelEdit(c, input.id));
  saving.toggleAttribute('disabled', edit.sending);
  return [box, saving, cancel];
}

/** An ended turn's controls, under its last row: Branch from here, and Undo last answer on the last one. */
function turnControls(c: Conversation, turn: string, last: boolean, actions: Actions): HTMLElement {
  return el(
    'div',
    { class: 'turn-controls' },
    button('branch', 'Branch from here', () => actions.branch(c, turn), { title: 'a new conversation whose history is this one up to here' }),
    ...(last ? [button('undo', 'Undo last answer', () => actions.undo(c, turn), { title: 'roll back this answer and its prompt: later turns never see them' })] : []),
  );
}

/** A follow-up dragged to another place in the queue. */
function draggable(row: HTMLElement, id: string): void {
  row.draggable = true;
  row.addEventListener('dragstart', (event) => {
    event.dataTransfer?.setData(DRAGGED, id);
    if (event.dataTransfer) event.dataTransfer.effectAllowed = 'move';
  });
}

/**
 * An input of the queue a follow-up is dropped on: dropped on its upper half, the follow-up goes
 * just before it; on its lower half, just after it. A drop where it already is moves nothing.
 */
function dropTarget(c: Conversation, row: HTMLElement, id: string, actions: Actions): void {
  row.addEventListener('dragover', (event) => {
    if (event.dataTransfer?.types.includes(DRAGGED)) event.preventDefault();
  });
  row.addEventListener('drop', (event) => {
    const dragged = event.dataTransfer?.getData(DRAGGED);
    if (!dragged) return;
    event.preventDefault();
    const rest = (c.status?.queue ?? []).map((q) => q.id).filter((q) => q !== dragged);
    const box = row.getBoundingClientRect();
    const at = rest.indexOf(id) + (event.clientY < box.top + box.height / 2 ? 0 : 1);
    const before = rest[at] ?? null;
    const now = (c.status?.queue ?? []).map((q) => q.id);
    if (dragged !== id && now[now.indexOf(dragged) + 1] !== (before ?? undefined)) actions.move(c, dragged, before);
  });
}

/** The drag's data type: a follow-up's id. */
const DRAGGED = 'application/x-rudder-input';

const button = (action: string, label: string, onClick: () => void, attributes: Record<string, string> = {}): HTMLButtonElement => {
  const b = el('button', { type: 'button', 'data-action': action, ...attributes }, label) as HTMLButtonElement;
  b.addEventListener('click', onClick);
  return b;
};

/**
 * The transcript's rows, with the approval cards in place: a decided call's card stands for the
 * transcript's `approval` row of it; a call that waits (or was closed unrun: no row) comes after
 * the last row of its turn, the message that made the call. The last row of each ended turn
 * has "Branch from here", the last answer's "Undo last answer" too once no turn runs; a message
 * whose edit came too late says so.
 */
function transcriptRows(c: Conversation, actions: Actions): HTMLElement[] {
  const decide: Decide = (...decision) => actions.decide(c, ...decision);
  const rows: { node: HTMLElement; turn: string | null }[] = [];
  const placed = new Set<string>();
  const lastTurn = c.running === null && !c.status?.running ? c.lastTurns.at(-1) : undefined;
  const lastRowOf = new Map(c.transcript.map((item, index) => [item.turn, index]));
  const undoAt = lastTurn === undefined ? -1 : (lastRowOf.get(lastTurn) ?? -1);
  c.transcript.forEach((item, index) => {
    const approval = item.role === 'approval' ? c.approvals.get(item.id) : undefined;
    if (approval) {
      placed.add(approval.id);
      rows.push({ node: approvalCard(approval, decide), turn: item.turn });
      return;
    }
    const note = c.notes.get(item.id);
    const node = el(
      'li',
      { class: `message ${item.role}${item.steered ? ' steered' : ''}`, 'data-role': item.role, 'data-steered': String(item.steered), 'data-turn': item.turn ?? '', 'data-id': item.id },
      ...(item.steered ? [el('span', { class: 'badge', title: 'steered into the running turn' }, 'steered')] : []),
      ...(item.role === 'approval' ? [el('span', { class: 'badge' }, 'approval')] : []),
      el('span', { class: 'text' }, item.text),
      ...(note ? [el('span', { class: 'note', role: 'status' }, note)] : []),
      ...(item.turn !== null && index === lastRowOf.get(item.turn) && c.endedTurns.has(item.turn) ? [turnControls(c, item.turn, index === undoAt, actions)] : []),
    );
    rows.push({ node, turn: item.turn });
  });
  for (const approval of c.approvals.values()) {
    if (placed.has(approval.id)) continue;
    const last = rows.findLastIndex((row) => row.turn === approval.turn);
    rows.splice(last === -1 ? rows.length : last + 1, 0, { node: approvalCard(approval, decide), turn: approval.turn });
  }
  return rows.map((row) => row.node);
}

/** A moment as this browser's clock reads it, to the minute. */
const localTime = (iso: string) => new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
