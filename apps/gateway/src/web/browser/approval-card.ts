import { answered } from './answers';
import type { Approval, ApprovalCard } from './conversation';
import { el } from './dom';
import { pretty } from './labels';

/** Sends a decision on a waiting call (the page posts it with its token). */
export type Decide = (a: Approval, decision: 'approve' | 'deny', body: { arguments?: Record<string, unknown>; reason?: string }) => void;

/** An approval's card: made once, then brought up to date (its buttons while it waits, what became of it once decided). */
export function approvalCard(a: Approval, decide: Decide): HTMLElement {
  const card = (a.card ??= makeApprovalCard(a, decide));
  const outcome = a.outcome;
  const state =
    outcome === null ? 'awaiting' : 'closed' in outcome ? 'closed' : outcome.decision === 'approve' ? 'approved' : outcome.subject === null ? 'timed-out' : 'denied';
  card.root.dataset.state = state;
  card.actions.hidden = outcome !== null;
  for (const button of card.buttons) button.disabled = a.sending;
  card.edit.disabled = a.sending;
  card.reason.disabled = a.sending;
  if (outcome === null) {
    card.outcome.replaceChildren(...(a.sending ? ['sending your decision…'] : []));
    return card.root;
  }
  const by = 'subject' in outcome && outcome.subject !== null ? [' ', el('span', { class: 'by' }, `(by ${outcome.subject})`)] : [];
  card.outcome.replaceChildren(
    ...('closed' in outcome
      ? [el('b', {}, 'Not run'), `: ${outcome.closed.replace(/^not run:\s*/, '')}`]
      : outcome.decision === 'approve'
        ? outcome.arguments === null
          ? [el('b', {}, 'Approved'), ...by]
          : [el('b', {}, 'Approved with edited arguments'), ...by, el('pre', { class: 'arguments' }, pretty(outcome.arguments))]
        : outcome.subject === null
          ? [el('b', {}, 'Timed out'), ': nobody decided in time, so it was denied and not run']
          : [el('b', {}, 'Denied'), outcome.reason ? `: ${outcome.reason}` : '', ...by]),
  );
  return card.root;
}

function makeApprovalCard(a: Approval, decide: Decide): ApprovalCard {
  const title = `approval-${a.id}`;
  const edit = el('textarea', { class: 'arguments', 'aria-label': `arguments of ${a.tool}`, spellcheck: 'false' }) as HTMLTextAreaElement;
  edit.value = pretty(a.arguments);
  edit.rows = Math.min(12, edit.value.split('\n').length);
  const details = el('details', { class: 'edit' }, el('summary', {}, 'Edit arguments before approving'), edit) as HTMLDetailsElement;
  const reason = el('input', { type: 'text', maxlength: '2000', placeholder: 'optional', autocomplete: 'off' }) as HTMLInputElement;
  const approve = el('button', { type: 'button', class: 'approve', 'data-action': 'approve', 'aria-describedby': title }, 'Approve') as HTMLButtonElement;
  const deny = el('button', { type: 'button', class: 'deny', 'data-action': 'deny', 'aria-describedby': title }, 'Deny') as HTMLButtonElement;
  approve.addEventListener('click', () => {
    let edited: Record<string, unknown> | undefined;
    if (details.open && edit.value.trim() !== pretty(a.arguments).trim()) {
      try {
        const parsed: unknown = JSON.parse(edit.value);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('the arguments must be a JSON object');
        edited = parsed as Record<string, unknown>;
      } catch (error) {
        answered(`approve ${a.tool}`, error instanceof SyntaxError ? new Error('the edited arguments are not JSON') : error);
        return;
      }
    }
    decide(a, 'approve', edited === undefined ? {} : { arguments: edited });
  });
  deny.addEventListener('click', () => {
    const text = reason.value.trim();
    decide(a, 'deny', text === '' ? {} : { reason: text });
  });
  reason.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      deny.click();
    }
  });
  const actions = el('div', { class: 'actions' }, details, approve, el('span', { class: 'deny-group' }, el('label', { class: 'reason' }, 'Reason for denying', reason), deny));
  const outcome = el('div', { class: 'outcome', role: 'status' });
  const expires = a.expiresAt ? [el('div', { class: 'expires' }, `denied as timed out at ${new Date(a.expiresAt).toLocaleTimeString()} unless decided before`)] : [];
  const root = el(
    'li',
    { class: 'approval', 'data-role': 'approval', 'data-approval': a.id, 'data-tool': a.tool, 'data-turn': a.turn, role: 'group', 'aria-labelledby': title },
    el('div', { class: 'head', id: title }, el('span', { class: 'badge' }, 'approval'), 'The agent wants to run ', el('code', {}, a.tool), ' with:'),
    el('pre', { class: 'arguments' }, pretty(a.arguments)),
    ...expires,
    actions,
    outcome,
  );
  return { root, actions, outcome, edit, reason, buttons: [approve, deny] };
}
