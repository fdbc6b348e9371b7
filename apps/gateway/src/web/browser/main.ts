/**
 * The web chat (`GET /` of the gateway): plain DOM on `@rudder/client`, bundled by esbuild
 * (web-app.ts). It shows the conversations this browser opened (localStorage), the transcript
 * as the companion folds it (steered messages marked), the streaming answer from the token
 * events, the pending queue with retract and promote, and what every control answered.
 *
 * The transcript and the queue are read again after each stored event the stream yields; the
 * client makes those reads reflect at least that event (read what you have seen).
 *
 * Beside the turn (#33): once the last turn has ended, suggested next messages are buttons under
 * its answer (a click sends one as an ordinary chat); a conversation reopened after it was idle
 * for RECAP_IDLE_MS shows its recap above the transcript. Both answer empty when they cannot be
 * made, and then the page shows nothing. The agent's plan (its todos) is a checklist panel beside
 * the transcript, kept from the stream's `todos.updated` events (the stream is read from the
 * conversation's start, so the last one is the plan now).
 *
 * Approvals (#34): a tool call that waits for a person's approval (`approval.requested`) is a
 * card in the transcript under the message that made it: the tool, its arguments (pretty JSON,
 * editable before approving), Approve, and Deny with an optional reason. A click posts the
 * decision with the page's token; the card then shows what became of the call however it was
 * decided (`approval.decided`: here, by another client, or by its timeout) or closed (a
 * `tool.ended` while it waited: a stop, an interrupt). Kept from the stream like the plan (read
 * from the conversation's start, so a page loaded while a call waits shows it), and from the
 * status's `awaiting`. Once decided, the card stands where the transcript's `approval` row is.
 */
import { RudderClient, RudderError, type StreamEvent } from '@rudder/client';
import type { ApprovalDecision, ConversationStatus, TodoItem, TranscriptItem } from '@rudder/contracts';

const CONVERSATIONS = 'rudder.conversations';
const TOKEN = 'rudder.token';
/**
 * The page's threshold for the recap: a conversation reopened whose last message is older than
 * this shows it. 10 minutes, or the number of milliseconds in localStorage `rudder.recapIdleMs`.
 */
const RECAP_IDLE_MS = Number(localStorage.getItem('rudder.recapIdleMs') ?? 10 * 60_000);

const byId = <T extends HTMLElement>(id: string): T => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
};

/** An element with attributes (data-*, class, …) and children. */
function el(tag: string, attributes: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

const authRequired = document.body.dataset.auth === 'required';
const tokenInput = byId<HTMLInputElement>('token');
tokenInput.value = sessionStorage.getItem(TOKEN) ?? '';
tokenInput.addEventListener('change', () => {
  sessionStorage.setItem(TOKEN, tokenInput.value.trim());
  if (conversation) void open(conversation.key);
});
byId('token-field').hidden = !authRequired;
byId('mode').textContent = authRequired ? 'every call carries your token' : 'open development mode: no token needed';

const client = new RudderClient({ baseUrl: location.origin, token: () => tokenInput.value.trim() });

/** What the page knows of the open conversation. */
type Conversation = {
  key: string;
  stop: AbortController;
  transcript: TranscriptItem[];
  status: ConversationStatus | null;
  /** The running turn and the tool it runs, from the stream. */
  running: string | null;
  tool: string | null;
  /** How the latest turn that ended, ended (completed, stopped…). */
  ended: string | null;
  /** The streamed text of each step not yet in the transcript (`turn:step`), and the steps stored since. */
  live: Map<string, string>;
  stored: Set<string>;
  /** The turns that ended: their steps are all in the transcript. */
  endedTurns: Set<string>;
  refreshing: Promise<void> | null;
  again: boolean;
  /** Whether the conversation was in this browser's list before it was opened now (its recap may show). */
  reopened: boolean;
  recap: string;
  /** The suggested next messages under the last answer, and the turn they follow (asked once per turn). */
  suggestions: string[];
  suggestedAfter: string | null;
  /** The agent's plan, as the last `todos.updated` left it. */
  todos: TodoItem[];
  /** The calls that waited or wait for a person's approval, by approval id, in the order they were asked for. */
  approvals: Map<string, Approval>;
};

/** A call that waits, or waited, for a person's approval, and what became of it. */
type Approval = {
  id: string;
  turn: string;
  /** Its step (null when it is known from the status only, which does not say). */
  step: number | null;
  callId: string;
  tool: string;
  arguments: string;
  expiresAt: string | null;
  /** Null while it waits; a decision (here, elsewhere, or its timeout: `subject` null); or closed unrun with this result. */
  outcome: null | { decision: 'approve' | 'deny'; reason: string | null; arguments: string | null; subject: string | null } | { closed: string };
  /** A decision of this page is on its way. */
  sending: boolean;
  /** Its card, kept across renders (a reason being typed stays). */
  card: ApprovalCard | null;
};
type ApprovalCard = { root: HTMLElement; actions: HTMLElement; outcome: HTMLElement; edit: HTMLTextAreaElement; reason: HTMLInputElement; buttons: HTMLButtonElement[] };
let conversation: Conversation | null = null;

// The conversation list: the keys this browser opened, latest first.
const remembered = (): string[] => {
  try {
    const keys: unknown = JSON.parse(localStorage.getItem(CONVERSATIONS) ?? '[]');
    return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : [];
  } catch {
    return [];
  }
};
function remember(key: string) {
  localStorage.setItem(CONVERSATIONS, JSON.stringify([key, ...remembered().filter((k) => k !== key)].slice(0, 50)));
  renderList();
}
function renderList() {
  byId('conversations').replaceChildren(
    ...remembered().map((key) => {
      const link = el('a', { href: `#${encodeURIComponent(key)}`, ...(key === conversation?.key ? { 'aria-current': 'true' } : {}) }, key);
      return el('li', {}, link);
    }),
  );
}

byId<HTMLFormElement>('open-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const key = byId<HTMLInputElement>('key').value.trim();
  if (key) location.hash = encodeURIComponent(key);
});
window.addEventListener('hashchange', () => openFromHash());
function openFromHash() {
  const key = decodeURIComponent(location.hash.slice(1));
  if (key && key !== conversation?.key) void open(key);
}

async function open(key: string) {
  conversation?.stop.abort();
  const reopened = remembered().includes(key);
  const opened: Conversation = {
    key,
    stop: new AbortController(),
    transcript: [],
    status: null,
    running: null,
    tool: null,
    ended: null,
    live: new Map(),
    stored: new Set(),
    endedTurns: new Set(),
    refreshing: null,
    again: false,
    reopened,
    recap: '',
    suggestions: [],
    suggestedAfter: null,
    todos: [],
    approvals: new Map(),
  };
  conversation = opened;
  remember(key);
  byId('title').textContent = key;
  byId('answers').replaceChildren();
  byId('compose').hidden = false;
  render();
  void follow(opened);
  await refresh(opened);
  void recap(opened);
}

/** A conversation reopened after RECAP_IDLE_MS shows where it stood. */
async function recap(c: Conversation) {
  const last = c.transcript.at(-1);
  if (!c.reopened || !last || Date.now() - Date.parse(last.at) < RECAP_IDLE_MS) return;
  const answer = await client.recap(c.key).catch(() => ({ recap: '' }));
  if (c !== conversation) return;
  c.recap = answer.recap;
  render();
}

/** Once the last turn has ended, its suggested next messages (asked once per turn). */
async function suggest(c: Conversation) {
  const last = c.transcript.at(-1);
  const after = last?.role === 'assistant' && c.status?.running === null ? last.turn : null;
  if (after === null || after === c.suggestedAfter) return;
  c.suggestedAfter = after;
  c.suggestions = [];
  const answer = await client.followups(c.key, { n: 3 }).catch(() => ({ suggestions: [] }));
  if (c !== conversation || c.suggestedAfter !== after) return;
  c.suggestions = answer.suggestions;
  render();
}

/** The conversation's events from its start: each stored one re-reads the transcript and queue; tokens stream in. */
async function follow(c: Conversation) {
  try {
    for await (const event of client.events(c.key, { after: 0, signal: c.stop.signal })) {
      if (c !== conversation) return;
      onEvent(c, event);
    }
  } catch (error) {
    if (c === conversation) answered('events', error);
  }
}

function onEvent(c: Conversation, event: StreamEvent) {
  switch (event.type) {
    case 'token': {
      const step = `${event.data.turn}:${event.data.step}`;
      // Tokens and events are two topics: a step's last tokens may come after the event that
      // stored it. The transcript has that step whole by then; a fragment would linger.
      if (c.stored.has(step) || c.endedTurns.has(event.data.turn)) return;
      c.live.set(step, (c.live.get(step) ?? '') + event.data.text);
      render();
      return;
    }
    case 'turn.started':
      c.running = event.data.turn;
      break;
    case 'tool.started':
      c.tool = event.data.call.name;
      break;
    case 'tool.ended': {
      c.tool = null;
      // A call that still waited got its result without a decision: its turn closed it unrun.
      const { turn, step, callId, result } = event.data;
      for (const a of c.approvals.values()) {
        if (a.outcome === null && a.turn === turn && a.callId === callId && (a.step === null || a.step === step)) a.outcome = { closed: result };
      }
      break;
    }
    case 'approval.requested': {
      const { approval, turn, step, call, expiresAt } = event.data;
      const known = c.approvals.get(approval);
      if (known) known.step = step;
      else c.approvals.set(approval, { id: approval, turn, step, callId: call.id, tool: call.name, arguments: call.arguments, expiresAt, outcome: null, sending: false, card: null });
      break;
    }
    case 'approval.decided': {
      const a = c.approvals.get(event.data.approval);
      const { decision, reason, arguments: edited, subject } = event.data;
      if (a && (a.outcome === null || !('closed' in a.outcome))) a.outcome = { decision, reason, arguments: edited, subject };
      break;
    }
    case 'model.replied':
      c.stored.add(`${event.data.turn}:${event.data.step}`);
      break;
    case 'todos.updated':
      c.todos = event.data.items;
      render();
      return;
    case 'turn.ended':
      c.running = null;
      c.tool = null;
      c.ended = event.data.status;
      c.endedTurns.add(event.data.turn);
      for (const a of c.approvals.values()) if (a.turn === event.data.turn && a.outcome === null) a.outcome = { closed: `not run: the turn ended (${event.data.status}) before anyone decided` };
      for (const step of c.live.keys()) if (step.startsWith(`${event.data.turn}:`)) c.stored.add(step);
      break;
  }
  void refresh(c);
}

/** Reads the transcript and the status again; calls that come while one runs make one more run after it. */
function refresh(c: Conversation): Promise<void> {
  if (c.refreshing) {
    c.again = true;
    return c.refreshing;
  }
  c.refreshing = (async () => {
    do {
      c.again = false;
      const done = new Set(c.stored);
      const [transcript, status] = await Promise.all([allMessages(c.key), client.status(c.key).catch(orNull)]);
      if (c !== conversation) return;
      c.transcript = transcript;
      c.status = status;
      // The calls waiting as the status lists them (the stream may not have brought them yet).
      for (const a of status?.awaiting ?? []) {
        if (!c.approvals.has(a.approvalId)) {
          c.approvals.set(a.approvalId, { id: a.approvalId, turn: a.turn, step: null, callId: a.callId, tool: a.tool, arguments: a.arguments, expiresAt: a.expiresAt, outcome: null, sending: false, card: null });
        }
      }
      for (const step of done) c.live.delete(step);
      if (c.status?.running) c.suggestions = [];
      render();
      void suggest(c);
    } while (c.again);
  })()
    .catch((error: unknown) => answered('read', error))
    .finally(() => (c.refreshing = null));
  return c.refreshing;
}

async function allMessages(key: string): Promise<TranscriptItem[]> {
  const items: TranscriptItem[] = [];
  let after: string | undefined;
  do {
    const page = await client.messages(key, { after }).catch(orNull);
    if (!page) break;
    items.push(...page.items);
    after = page.next ?? undefined;
  } while (after);
  return items;
}

/** A conversation nobody wrote to yet has no status or transcript: not an error. */
const orNull = (error: unknown): null => {
  if (error instanceof RudderError && error.code === 'not_found') return null;
  throw error;
};

function render() {
  const c = conversation;
  renderList();
  if (!c) return;
  // A render moves the approval cards (a reason being typed, the focus in it): put the focus back.
  const focused = document.activeElement;
  const selection = focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement ? [focused.selectionStart, focused.selectionEnd] : null;
  byId('transcript').replaceChildren(
    ...transcriptRows(c),
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
      button.addEventListener('click', () => {
        c.suggestions = [];
        render();
        void control(`chat ${quote(text)}`, () => client.chat(c.key, text), () => 'accepted: answered in order');
      });
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
          retract.addEventListener('click', () => control(`retract ${quote(input.text)}`, () => client.retract(c.key, input.id), (a) => `retracted ${quote(a.text)}`));
          const buttons = [retract];
          if (input.kind === 'chat') {
            const promote = el('button', { type: 'button', 'data-action': 'promote' }, 'Promote');
            promote.addEventListener('click', () => control(`promote ${quote(input.text)}`, () => client.promote(c.key, input.id), landing));
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
function transcriptRows(c: Conversation): HTMLElement[] {
  const rows: { node: HTMLElement; turn: string | null }[] = [];
  const placed = new Set<string>();
  for (const item of c.transcript) {
    const approval = item.role === 'approval' ? c.approvals.get(item.id) : undefined;
    if (approval) {
      placed.add(approval.id);
      rows.push({ node: approvalCard(c, approval), turn: item.turn });
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
    rows.splice(last === -1 ? rows.length : last + 1, 0, { node: approvalCard(c, approval), turn: approval.turn });
  }
  return rows.map((row) => row.node);
}

/** JSON arguments, pretty (as the model sent them when they are not JSON). */
const pretty = (json: string): string => {
  try {
    return JSON.stringify(JSON.parse(json), null, 2);
  } catch {
    return json;
  }
};

/** An approval's card: made once, then brought up to date (its buttons while it waits, what became of it once decided). */
function approvalCard(c: Conversation, a: Approval): HTMLElement {
  const card = (a.card ??= makeApprovalCard(c, a));
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

function makeApprovalCard(c: Conversation, a: Approval): ApprovalCard {
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
    void decide(c, a, 'approve', edited === undefined ? {} : { arguments: edited });
  });
  deny.addEventListener('click', () => {
    const text = reason.value.trim();
    void decide(c, a, 'deny', text === '' ? {} : { reason: text });
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

/** Posts a decision on a waiting call; the card shows it from the answer (a decision is final), or the stream. */
async function decide(c: Conversation, a: Approval, decision: 'approve' | 'deny', body: { arguments?: Record<string, unknown>; reason?: string }) {
  if (a.sending || a.outcome !== null) return;
  a.sending = true;
  render();
  const what = `${decision} ${a.tool}`;
  try {
    const answer: ApprovalDecision = decision === 'approve' ? await client.approve(c.key, a.id, body) : await client.deny(c.key, a.id, body);
    if (a.outcome === null) a.outcome = { decision: answer.decision, reason: answer.reason, arguments: answer.arguments, subject: answer.subject };
    answered(what, undefined, answer.decision === 'approve' ? `approved${answer.arguments === null ? '' : ' with edited arguments'}: it runs` : `denied${answer.reason ? `: ${answer.reason}` : ''}`);
  } catch (error) {
    answered(what, error);
  }
  a.sending = false;
  if (c === conversation) render();
  void refresh(c);
}

/** A text as a control's label quotes it: at most 40 characters. */
const quote = (text: string) => `“${text.length > 40 ? `${text.slice(0, 39)}…` : text}”`;

/** A turn id as the page shows it: its first eight characters are enough to tell turns apart. */
const short = (turn: string | null) => (turn && turn.length > 8 ? `${turn.slice(0, 8)}…` : String(turn));

const landing = (a: { turn: string | null; landed: boolean }) =>
  a.landed ? `landed: turn ${short(a.turn)} takes it at its next step` : 'not landed: it will be answered as a turn of its own';

/** Runs a control and writes what it answered (landed or not, queue full, forbidden…) in the answers list. */
async function control<T>(what: string, call: () => Promise<T>, describe: (answer: T) => string) {
  const c = conversation;
  if (!c) return;
  try {
    const answer = await call();
    answered(what, undefined, describe(answer));
  } catch (error) {
    answered(what, error);
  }
  void refresh(c);
}

function answered(what: string, error: unknown, text?: string) {
  const line =
    error === undefined
      ? el('li', { class: 'ok', 'data-control': what.split(' ')[0] }, el('b', {}, what), `: ${text}`)
      : error instanceof RudderError
        ? el(
            'li',
            { class: 'refused', 'data-control': what.split(' ')[0], 'data-code': error.code },
            el('b', {}, what),
            `: ${error.status} ${error.code.replace(/_/g, ' ')} — ${error.message}${error.retryAfterSeconds ? ` (retry in ${error.retryAfterSeconds} s)` : ''}`,
          )
        : el('li', { class: 'refused', 'data-control': what.split(' ')[0] }, el('b', {}, what), `: ${String(error)}`);
  byId('answers').prepend(line);
}

const textBox = byId<HTMLTextAreaElement>('text');
function send(kind: 'chat' | 'steer') {
  const c = conversation;
  const text = textBox.value.trim();
  if (!c || !text) return;
  textBox.value = '';
  if (kind === 'chat') void control(`chat ${quote(text)}`, () => client.chat(c.key, text), () => 'accepted: answered in order');
  else void control(`steer ${quote(text)}`, () => client.steer(c.key, text), landing);
}
byId<HTMLFormElement>('compose').addEventListener('submit', (event) => {
  event.preventDefault();
  send('chat');
});
textBox.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey) {
    event.preventDefault();
    send(event.ctrlKey || event.metaKey ? 'steer' : 'chat');
  }
});
byId('steer').addEventListener('click', () => send('steer'));
byId('stop').addEventListener('click', () => {
  const c = conversation;
  if (c) void control('stop', () => client.stop(c.key), (a) => (a.turn ? `stopping turn ${short(a.turn)}` : 'no turn was running'));
});

renderList();
openFromHash();
