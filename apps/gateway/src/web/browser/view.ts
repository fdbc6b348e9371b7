import { approvalCard, type Decide } from './approval-card';
import type { Conversation } from './conversation';
import { byId, el } from './dom';
import { short } from './labels';

/** What a click on the page asks for; the page (main.ts) runs it. */
export type Actions = {
  /** A suggested next message clicked: sent as an ordinary chat. */
  suggestion(c: Conversation, text: string): void;
  retract(c: Conversation, input: { id: string; text: string }): void;
  promote(c: Conversation, input: { id: string; text: string }): void;
  decide(c: Conversation, ...decision: Parameters<Decide>): void;
};

/** Shows the open conversation: its transcript with the approval cards, the plan, the recap, the suggestions, the turn's state and what waits. */
export function renderConversation(c: Conversation, actions: Actions) {
  // A render moves the approval cards (a reason being typed, the focus in it): put the focus back.
  const focused = document.activeElement;
  const selection = focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement ? [focused.selectionStart, focused.selectionEnd] : null;
  byId('transcript').replaceChildren(
    ...transcriptRows(c, (...decision) => actions.decide(c, ...decision)),
    ...[...c.live.values()].filter(Boolean).map((text) => el('li', { class: 'message assistant live', 'data-role': 'live' }, el('span', { class: 'text' }, text))),
  );
  if (focused instanceof HTMLElement && focused.isConnected && document.activeElement !== focused) {
    focused.focus({ preventScroll: true });
    if (selection && (focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement)) focused.setSelectionRange(selection[0], selection[1]);
  }
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
  byId('recap').hidden = c.recap === '';
  byId('recap').replaceChildren(el('b', {}, 'Where you were:'), c.recap);
  byId('suggestions').replaceChildren(
    ...c.suggestions.map((text) => {
      const button = el('button', { type: 'button', 'data-action': 'suggestion' }, text);
      button.addEventListener('click', () => actions.suggestion(c, text));
      return button;
    }),
  );
  const waiting = [...c.approvals.values()].filter((a) => a.outcome === null && a.turn === c.running).map((a) => a.tool);
  byId('turn-state').textContent = c.running
    ? `turn ${short(c.running)} ${waiting.length > 0 ? `waiting for your approval: ${waiting.join(', ')}` : `running${c.tool ? `: tool ${c.tool}` : ''}`}`
    : `no turn running${c.ended ? ` (the last one ${c.ended})` : ''}`;
  byId('turn-state').dataset.running = String(c.running !== null);
  const status = c.status;
  const pending = [
    ...(status?.steering ?? []).map((input) => ({ ...input, kind: 'steer' as const, waits: 'steering the running turn' })),
    ...(status?.queue ?? []).map((input) => ({ ...input, waits: input.kind === 'chat' ? 'follow-up' : 'steer, its own turn' })),
  ];
  byId('pending').replaceChildren(
    ...(pending.length === 0
      ? [el('li', { class: 'empty' }, 'nothing waits')]
      : pending.map((input) => {
          const retract = el('button', { type: 'button', 'data-action': 'retract' }, 'Retract');
          retract.addEventListener('click', () => actions.retract(c, input));
          const buttons = [retract];
          if (input.kind === 'chat') {
            const promote = el('button', { type: 'button', 'data-action': 'promote' }, 'Promote');
            promote.addEventListener('click', () => actions.promote(c, input));
            buttons.push(promote);
          }
          return el('li', { class: 'pending', 'data-kind': input.kind, 'data-id': input.id }, el('span', { class: 'kind' }, input.waits), el('span', { class: 'text' }, input.text), ...buttons);
        })),
  );
}

/**
 * The transcript's rows, with the approval cards in place: a decided call's card stands for the
 * transcript's `approval` row of it; a call that waits (or was closed unrun: no row) comes after
 * the last row of its turn, the message that made the call.
 */
function transcriptRows(c: Conversation, decide: Decide): HTMLElement[] {
  const rows: { node: HTMLElement; turn: string | null }[] = [];
  const placed = new Set<string>();
  for (const item of c.transcript) {
    const approval = item.role === 'approval' ? c.approvals.get(item.id) : undefined;
    if (approval) {
      placed.add(approval.id);
      rows.push({ node: approvalCard(approval, decide), turn: item.turn });
      continue;
    }
    const node = el(
      'li',
      { class: `message ${item.role}${item.steered ? ' steered' : ''}`, 'data-role': item.role, 'data-steered': String(item.steered), 'data-turn': item.turn ?? '' },
      ...(item.steered ? [el('span', { class: 'badge', title: 'steered into the running turn' }, 'steered')] : []),
      ...(item.role === 'approval' ? [el('span', { class: 'badge' }, 'approval')] : []),
      el('span', { class: 'text' }, item.text),
    );
    rows.push({ node, turn: item.turn });
  }
  for (const approval of c.approvals.values()) {
    if (placed.has(approval.id)) continue;
    const last = rows.findLastIndex((row) => row.turn === approval.turn);
    rows.splice(last === -1 ? rows.length : last + 1, 0, { node: approvalCard(approval, decide), turn: approval.turn });
  }
  return rows.map((row) => row.node);
}
