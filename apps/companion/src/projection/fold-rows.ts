import type { ConversationEvent, InputState } from '@rudder/contracts';
import { initialState, parseState } from '@rudder/conversation';
import type { ApprovalRow, ConversationRow, InputRow, TranscriptRow, TurnRow } from '../read-models/entities';
import { foldState } from './conversation-state';

/**
 * The pure fold of a batch of events over the read models' rows (`read-models/entities.ts`).
 * `fold-events.ts` loads the rows a batch touches, calls `foldRows`, and writes back what changed;
 * this file does no I/O, so the projection rules are tested without a database. The queue and
 * steering rules are not here: a conversation's status is its `ConversationState`, folded by the
 * worker's own `evolve` (`foldState`).
 */

/** The rows a batch may read or change, as they were before it. */
export type Rows = { conversations: ConversationRow[]; inputs: InputRow[]; turns: TurnRow[]; approvals: ApprovalRow[] };

/** What a batch changed: rows to upsert whole, and transcript rows to add. */
export type Changes = Rows & { transcript: TranscriptRow[] };

/** Which rows folding these events may read. */
export type Needed = {
  conversations: string[];
  inputs: { conversation: string; id: string }[];
  turns: { conversation: string; id: string }[];
  /** The turns whose every approval it may read (`id` the turn's). */
  approvals: { conversation: string; id: string }[];
};

export function rowsNeeded(events: readonly ConversationEvent[]): Needed {
  const conversations = new Set<string>();
  const inputs = new Map<string, { conversation: string; id: string }>();
  const turns = new Map<string, { conversation: string; id: string }>();
  const approvals = new Map<string, { conversation: string; id: string }>();
  const input = (conversation: string, id: string) => inputs.set(rowKey(conversation, id), { conversation, id });
  const turn = (conversation: string, id: string) => turns.set(rowKey(conversation, id), { conversation, id });
  const approvalsOf = (conversation: string, turn: string) => approvals.set(rowKey(conversation, turn), { conversation, id: turn });
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
        approvalsOf(c, event.data.turn);
        for (const s of event.data.steered) input(c, s.id);
        break;
      case 'approval.requested':
      case 'approval.decided':
      case 'tool.ended':
        approvalsOf(c, event.data.turn);
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
      case 'todos.updated':
      case 'history.compacted':
      case 'approval.refused':
        break;
      default:
        return unreachable(event);
    }
  }
  return { conversations: [...conversations], inputs: [...inputs.values()], turns: [...turns.values()], approvals: [...approvals.values()] };
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
 * - `turn.ended`: the turn's final status, outcome, content and steered messages, and whether
 *   it wound down; every approval of the turn still awaiting is closed unrun.
 * - `approval.requested`: an approval awaiting, at the event's position (the request order).
 * - `approval.decided`: an awaiting approval is approved or denied (reason, edited arguments,
 *   subject, when), and the decision enters the transcript as an `approval` row under the
 *   approval's id, at the event's position (`decisionText` says how it reads).
 * - `tool.ended` for a call whose approval still awaits: the turn closed the call unrun (a stop,
 *   an interrupt), and the approval is closed with it.
 * - `conversation.opened`, `access.granted`, `stop.requested`: the state only.
 * - `retract.refused`, `promote.refused`, `approval.refused`, `tool.started`, any other
 *   `tool.ended`: copied for replay only; so is `guard.failed` (the guard failed, nothing was
 *   decided): its input gets no row, so the same id sent again is not answered from here but
 *   guarded again.
 * Only a pending input or an awaiting approval changes state, and the first final state stands.
 * A repeated `turn.started` for a known turn, an input accepted (or rejected) twice under other
 * event ids, or an approval requested twice, changes nothing.
 */
export function foldRows(before: Rows, events: readonly ConversationEvent[]): Changes {
  const fold = new RowFold(before);
  for (const event of events) fold.apply(event);
  return fold.changes();
}

/** The rows a batch touches, as `foldRows` folds its events over them one by one; each step a method. */
class RowFold {
  private readonly conversations: Map<string, ConversationRow>;
  private readonly inputs: Map<string, InputRow>;
  private readonly turns: Map<string, TurnRow>;
  private readonly approvals: Map<string, ApprovalRow>;
  private readonly changed = { conversations: new Set<string>(), inputs: new Set<string>(), turns: new Set<string>(), approvals: new Set<string>() };
  private readonly transcript: TranscriptRow[] = [];

  constructor(before: Rows) {
    this.conversations = new Map(before.conversations.map((r) => [r.key, { ...r, state: parseState(r.state) }]));
    this.inputs = new Map(before.inputs.map((r) => [rowKey(r.conversation, r.id), { ...r }]));
    this.turns = new Map(before.turns.map((r) => [rowKey(r.conversation, r.id), { ...r, steered: [...r.steered] }]));
    this.approvals = new Map(before.approvals.map((r) => [rowKey(r.conversation, r.approval), { ...r }]));
  }

  apply(event: ConversationEvent): void {
    const conversation = this.evolve(event);
    switch (event.type) {
      case 'input.accepted':
        return this.accept(event);
      case 'input.rejected':
        return this.reject(event);
      case 'steer.accepted':
        return this.decideSteer(event);
      case 'steer.taken':
        return this.takeSteer(event);
      case 'turn.started':
        return this.startTurn(event, conversation.state.agent);
      case 'model.replied':
        return this.reply(event);
      case 'turn.ended':
        return this.endTurn(event);
      case 'approval.requested':
        return this.requestApproval(event);
      case 'approval.decided':
        return this.decideApproval(event);
      case 'tool.ended':
        return this.closeApprovals(event.conversation, event.data.turn, (a) => a.step === event.data.step && a.callId === event.data.callId);
      case 'input.retracted':
        return this.settle(event.conversation, event.data.input.id, 'retracted');
      case 'input.discarded':
        return this.settle(event.conversation, event.data.input.id, 'discarded');
      case 'input.delivered':
        return this.settle(event.conversation, event.data.input.id, 'delivered');
      case 'conversation.opened':
      case 'access.granted':
      case 'stop.requested':
      case 'grant.refused':
      case 'stop.refused':
      case 'retract.refused':
      case 'promote.refused':
      case 'guard.failed':
      case 'tool.started':
      case 'todos.updated':
      case 'history.compacted':
      case 'approval.refused':
        return; // the state only, or copied for replay only
      default:
        return unreachable(event);
    }
  }

  changes(): Changes {
    const pick = <T>(rows: Map<string, T>, keys: Set<string>): T[] => [...keys].map((k) => rows.get(k) as T);
    return {
      conversations: pick(this.conversations, this.changed.conversations),
      inputs: pick(this.inputs, this.changed.inputs),
      turns: pick(this.turns, this.changed.turns),
      approvals: pick(this.approvals, this.changed.approvals),
      transcript: this.transcript,
    };
  }

  /** The conversation's position, its state as `evolve` folds it, and when its running turn started. */
  private evolve(event: ConversationEvent): ConversationRow {
    const key = event.conversation;
    let row = this.conversations.get(key);
    if (!row) this.conversations.set(key, (row = { key, position: 0, state: initialState(), runningStartedAt: null }));
    row.position = Math.max(row.position, event.position);
    const was = row.state.runningTurn;
    row.state = foldState(row.state, event);
    if (row.state.runningTurn !== was) row.runningStartedAt = row.state.runningTurn === null ? null : event.at;
    this.changed.conversations.add(key);
    return row;
  }

  /** A pending input's final state: delivered, retracted or discarded; the first final state stands. */
  private settle(conversation: string, id: string, state: InputState): void {
    const row = this.inputs.get(rowKey(conversation, id));
    if (row && row.state === 'pending') {
      row.state = state;
      this.changed.inputs.add(rowKey(conversation, id));
    }
  }

  private accept(event: Of<'input.accepted'>): void {
    const c = event.conversation;
    const { input } = event.data;
    const key = rowKey(c, input.id);
    if (this.inputs.has(key)) return;
    this.inputs.set(key, {
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
    this.changed.inputs.add(key);
  }

  private reject(event: Of<'input.rejected'>): void {
    const c = event.conversation;
    const { input, code, message } = event.data;
    const key = rowKey(c, input.id);
    if (this.inputs.has(key)) return;
    this.inputs.set(key, {
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
    this.changed.inputs.add(key);
  }

  /** The first decision stands: the gateway answers a repeated steer id with it. */
  private decideSteer(event: Of<'steer.accepted'>): void {
    const { input, turn, landed } = event.data;
    const key = rowKey(event.conversation, input.id);
    const row = this.inputs.get(key);
    if (!row || row.steerLanded !== null) return;
    row.steerTurn = turn;
    row.steerLanded = landed;
    this.changed.inputs.add(key);
  }

  private takeSteer(event: Of<'steer.taken'>): void {
    const c = event.conversation;
    const { turn, input: steer } = event.data;
    const input = this.inputs.get(rowKey(c, steer.id));
    this.settle(c, steer.id, 'delivered');
    this.transcript.push({
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
    const row = this.turns.get(rowKey(c, turn));
    if (row && row.status === 'running' && !row.steered.some((s) => s.id === steer.id)) {
      row.steered.push({ id: steer.id, text: steer.text });
      this.changed.turns.add(rowKey(c, turn));
    }
  }

  private startTurn(event: Of<'turn.started'>, agent: string | null): void {
    const c = event.conversation;
    const { turn, prompt } = event.data;
    const key = rowKey(c, turn);
    if (this.turns.has(key)) return;
    this.turns.set(key, {
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
      startedAt: event.at,
      endedAt: null,
    });
    this.changed.turns.add(key);
    const input = this.inputs.get(rowKey(c, prompt.id));
    this.settle(c, prompt.id, 'delivered');
    // A prompt the companion never saw accepted (it came another way) is shown as its text.
    const messages = input?.messages ?? [prompt.text];
    messages.forEach((text, i) =>
      this.transcript.push({
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
  }

  private reply(event: Of<'model.replied'>): void {
    const c = event.conversation;
    const { turn, step, content, usage } = event.data;
    const key = rowKey(c, turn);
    const running = this.turns.get(key);
    if (usage && running && running.status === 'running') {
      running.usage = {
        promptTokens: (running.usage?.promptTokens ?? 0) + usage.promptTokens,
        completionTokens: (running.usage?.completionTokens ?? 0) + usage.completionTokens,
        totalTokens: (running.usage?.totalTokens ?? 0) + usage.totalTokens,
      };
      this.changed.turns.add(key);
    }
    if (content === '') return;
    this.transcript.push({ conversation: c, position: event.position, part: 0, id: `${turn}/${step}`, role: 'assistant', text: content, turn, steered: false, at: event.at });
    if (running && running.status === 'running') {
      running.content = running.content === '' ? content : `${running.content}\n\n${content}`;
      this.changed.turns.add(key);
    }
  }

  private endTurn(event: Of<'turn.ended'>): void {
    const c = event.conversation;
    const { turn, status, outcome, content, steered, usage, woundDown = false } = event.data;
    const row = this.turns.get(rowKey(c, turn));
    if (row) {
      Object.assign(row, { status, outcome, content, steered, usage: usage ?? row.usage, woundDown, endedAt: event.at });
      this.changed.turns.add(rowKey(c, turn));
    }
    for (const s of steered) this.settle(c, s.id, 'delivered');
    this.closeApprovals(c, turn, () => true);
  }

  private requestApproval(event: Of<'approval.requested'>): void {
    const c = event.conversation;
    const { turn, step, approval, call, requestedAt, expiresAt } = event.data;
    const key = rowKey(c, approval);
    if (this.approvals.has(key)) return;
    this.approvals.set(key, {
      conversation: c,
      approval,
      turn,
      step,
      callId: call.id,
      tool: call.name,
      arguments: call.arguments,
      requestedAt,
      expiresAt,
      state: 'awaiting',
      reason: null,
      editedArguments: null,
      subject: null,
      decidedAt: null,
      position: event.position,
    });
    this.changed.approvals.add(key);
  }

  /** An awaiting approval decided, and its decision in the transcript; a call decided or closed before keeps its first state. */
  private decideApproval(event: Of<'approval.decided'>): void {
    const c = event.conversation;
    const { turn, approval, decision, reason, arguments: edited, subject } = event.data;
    const key = rowKey(c, approval);
    const row = this.approvals.get(key);
    if (!row || row.state !== 'awaiting') return;
    Object.assign(row, { state: decision === 'approve' ? 'approved' : 'denied', reason, editedArguments: edited, subject, decidedAt: event.at });
    this.changed.approvals.add(key);
    this.transcript.push({ conversation: c, position: event.position, part: 0, id: approval, role: 'approval', text: decisionText(row), turn, steered: false, at: event.at });
  }

  /** Closes, unrun, the approvals of `turn` that still await and match: nobody decided them before the turn closed their calls. */
  private closeApprovals(conversation: string, turn: string, matches: (row: ApprovalRow) => boolean): void {
    for (const [key, row] of this.approvals) {
      if (row.conversation !== conversation || row.turn !== turn || row.state !== 'awaiting' || !matches(row)) continue;
      row.state = 'closed';
      this.changed.approvals.add(key);
    }
  }
}

/**
 * How a decision reads in the transcript (role `approval`), from its approval's row once decided:
 * - approved as called: `approved <tool>(<arguments>)`, e.g. `approved send_email({"to":"a"})`;
 * - approved with edited arguments: `approved <tool> with edited arguments <edited>`;
 * - denied by a person: `denied <tool>: <reason>`, or `denied <tool>` without one;
 * - denied by its timeout (no subject): `denied <tool>: <reason>`, the worker's reason saying
 *   it timed out (`timed out: nobody decided by …`), or `denied <tool>: timed out` without one.
 * The arguments are the JSON as stored, not reformatted.
 */
export function decisionText(row: Pick<ApprovalRow, 'state' | 'tool' | 'arguments' | 'editedArguments' | 'reason' | 'subject'>): string {
  if (row.state === 'approved')
    return row.editedArguments === null ? `approved ${row.tool}(${row.arguments})` : `approved ${row.tool} with edited arguments ${row.editedArguments}`;
  const reason = row.reason ?? (row.subject === null ? 'timed out' : null);
  return reason === null ? `denied ${row.tool}` : `denied ${row.tool}: ${reason}`;
}

/** An event of one type. */
type Of<T extends ConversationEvent['type']> = Extract<ConversationEvent, { type: T }>;

const rowKey = (conversation: string, id: string): string => `${conversation}\u0000${id}`;

function unreachable(event: never): never {
  throw new Error(`unknown event type: ${JSON.stringify(event)}`);
}
