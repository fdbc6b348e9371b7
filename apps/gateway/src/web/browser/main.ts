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
 */
import { RudderClient, RudderError, type StreamEvent } from '@rudder/client';
import type { ConversationStatus, TodoItem, TranscriptItem } from '@rudder/contracts';

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
};
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
    case 'tool.ended':
      c.tool = null;
      break;
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
  byId('transcript').replaceChildren(
    ...c.transcript.map((item) =>
      el(
        'li',
        { class: `message ${item.role}${item.steered ? ' steered' : ''}`, 'data-role': item.role, 'data-steered': String(item.steered), 'data-turn': item.turn ?? '' },
        ...(item.steered ? [el('span', { class: 'badge', title: 'steered into the running turn' }, 'steered')] : []),
        el('span', { class: 'text' }, item.text),
      ),
    ),
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
  byId('turn-state').textContent = c.running
    ? `turn ${short(c.running)} running${c.tool ? `: tool ${c.tool}` : ''}`
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
