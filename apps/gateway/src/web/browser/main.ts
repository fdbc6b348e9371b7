/**
 * The web chat (`GET /` of the gateway): plain DOM on `@rudder/client`, bundled by esbuild
 * (web-app.ts). It shows the conversations this browser opened (localStorage), the transcript
 * as the companion folds it (steered messages marked), the streaming answer from the token
 * events, the pending queue with retract and promote, and what every control answered.
 *
 * Editing the conversation: a waiting message is edited in place (its text replaced where it
 * stands; an edit that comes too late says so on the message); the waiting follow-ups are
 * reordered by a drag, or by Move up / Move down; "Undo last answer" on the last answer rolls it
 * back if it is still the last one (`ifLastTurn`), and the transcript no longer shows it;
 * "Branch from here" on an ended turn forks the conversation there into a new key and opens it.
 *
 * The transcript and the queue are read again after each stored event the stream yields; the
 * client makes those reads reflect at least that event (read what you have seen).
 *
 * Beside the turn: once the last turn has ended, suggested next messages are buttons under its
 * answer (a click sends one as an ordinary chat); a conversation reopened after it was idle
 * for RECAP_IDLE_MS shows its recap above the transcript. Both answer empty when they cannot be
 * made, and then the page shows nothing. The agent's plan (its todos) is a checklist panel beside
 * the transcript, kept from the stream's `todos.updated` events (the stream is read from the
 * conversation's start, so the last one is the plan now). Its schedules are a panel too (what
 * each sends, when it fires next, and Cancel), read again after each `schedule.*` event.
 *
 * Approvals: a tool call that waits for a person's approval (`approval.requested`) is a card in
 * the transcript under the message that made it: the tool, its arguments (pretty JSON, editable
 * before approving), Approve, and Deny with an optional reason. A click posts the decision with
 * the page's token; the card then shows what became of the call however it was decided
 * (`approval.decided`: here, by another client, or by its timeout) or closed (a `tool.ended`
 * while it waited: a stop, an interrupt). Kept from the stream like the plan (read from the
 * conversation's start, so a page loaded while a call waits shows it), and from the status's
 * `awaiting`. Once decided, the card stands where the transcript's `approval` row is.
 *
 * This file is the page: its state (the open conversation), its reads and controls, and the
 * wiring of its elements. What it knows of a conversation and how an event changes it is
 * conversation.ts; how it is shown, view.ts and approval-card.ts.
 */
import { RudderClient, RudderError } from '@rudder/client';
import type { ApprovalDecision, TranscriptItem } from '@rudder/contracts';
import { answered } from './answers';
import type { Decide } from './approval-card';
import { applyEvent, applyRead, openedConversation, type Approval, type Conversation } from './conversation';
import { remember, remembered, renderList } from './conversation-list';
import { byId } from './dom';
import { landing, noLongerWaits, quote, short } from './labels';
import { renderConversation, type Actions } from './view';

const TOKEN = 'rudder.token';
/**
 * The page's threshold for the recap: a conversation reopened whose last message is older than
 * this shows it. 10 minutes, or the number of milliseconds in localStorage `rudder.recapIdleMs`.
 */
const RECAP_IDLE_MS = Number(localStorage.getItem('rudder.recapIdleMs') ?? 10 * 60_000);

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

let conversation: Conversation | null = null;

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
  const opened = openedConversation(key, remembered().includes(key));
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
      const next = applyEvent(c, event);
      if (next === 'render') render();
      else if (next === 'refresh') void refresh(c);
    }
  } catch (error) {
    if (c === conversation) answered('events', error);
  }
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
      const readSchedules = c.schedulesStale;
      c.schedulesStale = false;
      const [transcript, status, schedules] = await Promise.all([
        allMessages(c.key),
        client.status(c.key).catch(orNull),
        readSchedules ? client.schedules(c.key).catch(orNull) : null,
      ]);
      if (c !== conversation) return;
      if (schedules) c.schedules = schedules.items;
      applyRead(c, transcript, status, done);
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

/** What the page's buttons do (`view.ts` shows them). */
const actions: Actions = {
  suggestion: (c, text) => {
    c.suggestions = [];
    render();
    void control(`chat ${quote(text)}`, () => client.chat(c.key, text), () => 'accepted: answered in order');
  },
  retract: (c, input) => void control(`retract ${quote(input.text)}`, () => client.retract(c.key, input.id), (a) => `retracted ${quote(a.text)}`),
  promote: (c, input) => void control(`promote ${quote(input.text)}`, () => client.promote(c.key, input.id), landing),
  decide: (c, ...decision: Parameters<Decide>) => void decide(c, ...decision),
  startEdit: (c, input) => {
    c.edits.set(input.id, { kind: input.kind, text: input.text, box: null, sending: false });
    c.notes.delete(input.id);
    render();
    c.edits.get(input.id)?.box?.focus();
  },
  cancelEdit: (c, id) => {
    c.edits.delete(id);
    render();
  },
  edit: (c, id, text) => void edit(c, id, text),
  move: (c, id, before) => void control(`move ${quote(textOf(c, id))}`, () => client.move(c.key, id, before), (a) => (a.position === 0 ? 'moved: next in line' : `moved: ${a.position} ahead`)),
  undo: (c, turn) =>
    void control(
      'undo last answer',
      () => client.rollback(c.key, { turns: 1, ifLastTurn: turn }),
      (a) => `rolled back turn ${short(a.turns[0] ?? turn)}: later turns never see it`,
      (error) => (error.status === 412 ? 'another answer ended since you looked: nothing was undone; look at it, then undo again if you still mean it' : undefined),
    ),
  branch: (c, turn) => void branch(c, turn),
  cancelSchedule: (c, schedule) => void control(`cancel schedule ${quote(schedule.text)}`, () => client.cancelSchedule(c.key, schedule.id), () => 'cancelled: it fires no more'),
};

/** Forks the conversation at an ended turn into a new key, and opens the new conversation (its answers list says where it came from). */
async function branch(c: Conversation, turn: string) {
  const what = `branch from turn ${short(turn)}`;
  try {
    const forked = await client.fork(c.key, { into: branchKey(c.key), atTurn: turn });
    location.hash = encodeURIComponent(forked.key);
    await open(forked.key);
    answered(what, undefined, `opened ${forked.key}: its history is ${c.key}'s up to turn ${short(forked.atTurn)}`);
  } catch (error) {
    answered(what, error);
  }
}

/** A new key for a branch of `key`: `<key>-branch-<6 random characters>`, within the 200 characters of a key. */
const branchKey = (key: string) => `${key.slice(0, 200 - 14)}-branch-${Math.random().toString(36).slice(2, 8).padEnd(6, '0')}`;

/** A waiting message's text, as the page last read it. */
const textOf = (c: Conversation, id: string) => [...(c.status?.steering ?? []), ...(c.status?.queue ?? [])].find((input) => input.id === id)?.text ?? id;

/**
 * Sends an edit of a waiting message: done, the box closes (the text is replaced where it
 * stands, as the status shows it); refused because the message no longer waits (409), the box
 * closes and the message says what became of it; any other refusal leaves the box open.
 */
async function edit(c: Conversation, id: string, text: string) {
  const open = c.edits.get(id);
  if (!open || open.sending || !text) return;
  open.sending = true;
  render();
  const what = `edit ${quote(open.text)}`;
  try {
    const answer = await client.edit(c.key, id, text);
    c.edits.delete(id);
    answered(what, undefined, `edited: ${quote(answer.text)}, revision ${answer.revision}`);
  } catch (error) {
    open.sending = false;
    if (error instanceof RudderError && error.status === 409) {
      c.edits.delete(id);
      c.notes.set(id, noLongerWaits((error.details as { state?: string } | undefined)?.state));
    }
    answered(what, error);
  }
  if (c === conversation) render();
  void refresh(c);
}

function render() {
  renderList(conversation?.key);
  if (conversation) renderConversation(conversation, actions);
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

/**
 * Runs a control and writes what it answered (landed or not, queue full, forbidden…) in the
 * answers list; `plain` words a refusal it knows better than the API's message.
 */
async function control<T>(what: string, call: () => Promise<T>, describe: (answer: T) => string, plain?: (error: RudderError) => string | undefined) {
  const c = conversation;
  if (!c) return;
  try {
    const answer = await call();
    answered(what, undefined, describe(answer));
  } catch (error) {
    answered(what, error, error instanceof RudderError ? plain?.(error) : undefined);
  }
  void refresh(c);
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
