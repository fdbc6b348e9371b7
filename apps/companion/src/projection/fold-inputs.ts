import type { InputState } from '@rudder/contracts';
import type { Folds, Of, RowSet } from './row-set';

/**
 * The inputs and their receipts, as the companion keeps them (`InputRow`): the answer to the
 * same input sent again, and its standing.
 * - `input.accepted`: a pending input.
 * - `input.rejected`: an input refused (and answered by the refusal): recorded as `rejected`
 *   with its code, message and text's digest (no text); it never was pending and does not
 *   change owner or `lastInputId`.
 * - `steer.accepted`: the worker's decision (turn, landed) is recorded on the steer's input row
 *   (the answer to the same steer sent again); the steer stays pending.
 * - `input.retracted`, `input.discarded`: a pending input taken back, or dropped by a stop with
 *   discardPending: it leaves status and is never answered.
 * - `input.delivered`: the input reached a turn (as `turn.started` / `steer.taken` already say).
 * - `inputs.collapsed`: follow-ups answered by a later one's turn under its queue policy
 *   (`latest`), or joined to the one waiting before them (`merge`): `collapsed`, never a turn of their own.
 * `guard.failed` gets no row (the guard failed, nothing was decided), so the same id sent again
 * is not answered from here but guarded again. An input accepted (or rejected) twice under other
 * event ids changes nothing.
 */
export const INPUT_FOLDS: Folds = {
  'input.accepted': { fold: accept },
  'input.rejected': { fold: reject },
  'steer.accepted': { fold: decideSteer },
  'input.retracted': { fold: (rows, event) => settle(rows, event.conversation, event.data.input.id, 'retracted') },
  'input.discarded': { fold: (rows, event) => settle(rows, event.conversation, event.data.input.id, 'discarded') },
  'input.delivered': { fold: (rows, event) => settle(rows, event.conversation, event.data.input.id, 'delivered') },
  'inputs.collapsed': { fold: collapse },
};

/** A pending input's final state: delivered, retracted, discarded or collapsed; the first final state stands. */
export function settle(rows: RowSet, conversation: string, id: string, state: InputState): void {
  const row = rows.input(conversation, id);
  if (row && row.state === 'pending') {
    row.state = state;
    rows.touchInput(row);
  }
}

function accept(rows: RowSet, event: Of<'input.accepted'>): void {
  const { input } = event.data;
  if (rows.input(event.conversation, input.id)) return;
  rows.putInput({
    conversation: event.conversation,
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
    collapsedInto: null,
  });
}

function reject(rows: RowSet, event: Of<'input.rejected'>): void {
  const { input, code, message } = event.data;
  if (rows.input(event.conversation, input.id)) return;
  rows.putInput({
    conversation: event.conversation,
    id: input.id,
    kind: input.kind,
    // A refusal keeps no text, only its digest.
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
    collapsedInto: null,
  });
}

/** The first decision stands: the gateway answers a repeated steer id with it. */
function decideSteer(rows: RowSet, event: Of<'steer.accepted'>): void {
  const { input, turn, landed } = event.data;
  const row = rows.input(event.conversation, input.id);
  if (!row || row.steerLanded !== null) return;
  row.steerTurn = turn;
  row.steerLanded = landed;
  rows.touchInput(row);
}

/** Follow-ups collapsed into another (`into`): `collapsed`, naming it; the first final state stands. */
function collapse(rows: RowSet, event: Of<'inputs.collapsed'>): void {
  for (const id of event.data.from) {
    const row = rows.input(event.conversation, id);
    if (!row || row.state !== 'pending') continue;
    settle(rows, event.conversation, id, 'collapsed');
    row.collapsedInto = event.data.into;
  }
}
