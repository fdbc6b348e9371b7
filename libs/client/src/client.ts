import type {
  ApprovalDecision,
  ChatAccepted,
  ChatBody,
  ForkAnswer,
  ForkBody,
  ConversationStatus,
  EditAnswer,
  EditBody,
  Followups,
  GrantAnswer,
  MessageKind,
  Recap,
  RetractAnswer,
  MoveAnswer,
  RollbackAnswer,
  RollbackBody,
  ScheduleBody,
  ScheduleChangeBody,
  ScheduleItem,
  SchedulesAnswer,
  SteerAnswer,
  SteerBody,
  StopAnswer,
  TodoItem,
  Todos,
  TranscriptPage,
  TurnView,
} from '@rudder/contracts';
import { errorOf, RudderError } from './errors';
import { eventStream, type EventsOptions, type StreamEvent } from './events';

export type RudderClientOptions = {
  /** The gateway, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** The bearer token (or a function that gives the current one, e.g. a refreshed JWT); none in open development mode. */
  token?: string | (() => string | Promise<string>);
  /** Another fetch (a proxy's, a test's). Default: the global one. */
  fetch?: typeof fetch;
};

/** Per-request settings of a write. */
export type WriteOptions = { signal?: AbortSignal };
/** Per-request settings of a read (`signal`: e.g. `AbortSignal.timeout(ms)`). */
export type ReadOptions = { signal?: AbortSignal };

/**
 * Rudder's HTTP API, typed. Each method answers the 2xx body or throws a `RudderError` with
 * the API's `code` and status. Read your writes: it keeps, per conversation, the latest
 * `Rudder-Position` its writes were answered with, and sends it as `Rudder-Min-Position` on
 * its reads of that conversation, so a read through any gateway reflects its own writes.
 * It also reads what it has seen: once `events()` yielded a stored event, reads of that
 * conversation reflect at least that event's position. Chats and steers get an id when the
 * caller gives none, so sending one again is safe. Runs in Node 20 and in browsers (fetch and
 * streamed response bodies; no EventSource, so the token goes in the header).
 */
export class RudderClient {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly positions = new Map<string, number>();

  constructor(private readonly options: RudderClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Enqueues a follow-up; answered once the worker accepted it. */
  chat(key: string, body: ChatBody | string, options: WriteOptions = {}): Promise<ChatAccepted> {
    const input = typeof body === 'string' ? { text: body } : body;
    return this.write(key, 'POST', '/chat', { ...input, id: input.id ?? newId() }, options);
  }

  /** Steers the running turn; answered once the worker decided (`landed`). */
  steer(key: string, body: SteerBody | string, options: WriteOptions = {}): Promise<SteerAnswer> {
    const input = typeof body === 'string' ? { text: body } : body;
    return this.write(key, 'POST', '/steer', { ...input, id: input.id ?? newId() }, options);
  }

  /**
   * Stops the running turn (only `turn`, when given); answers the turn stopped, or null.
   * `graceful: true` asks it to wind down instead: its tools see `windDown`, the model is asked
   * once more, and it ends `completed` (`woundDown`).
   */
  stop(key: string, body: { discardPending?: boolean; turn?: string; graceful?: boolean } = {}, options: WriteOptions = {}): Promise<StopAnswer> {
    return this.write(key, 'POST', '/stop', body, options);
  }

  /** Takes back a pending input by id, or the latest pending one of a queue (`{latest: MessageKind}`). */
  retract(key: string, target: string | { latest: MessageKind }, options: WriteOptions = {}): Promise<RetractAnswer> {
    const rest = typeof target === 'string' ? `/inputs/${encodeURIComponent(target)}` : `/inputs?latest=${target.latest}`;
    return this.write(key, 'DELETE', rest, undefined, options);
  }

  /**
   * Edits a pending input (a follow-up, or a steer not taken yet): `text` (a steer, or a chat of
   * one message) or `messages` (a chat); `ifRevision` refuses it (412) unless the input is at that
   * revision. Answers the input as edited (its revision one more). The edit gets an id when the
   * caller gives none, so sending it again is safe.
   */
  edit(key: string, input: string, body: EditBody | string, options: WriteOptions = {}): Promise<EditAnswer> {
    const edit = typeof body === 'string' ? { text: body } : body;
    return this.write(key, 'PATCH', `/inputs/${encodeURIComponent(input)}`, { ...edit, id: edit.id ?? newId() }, options);
  }

  /**
   * Rolls back the last ended turns: `{turns: n}` or `{toTurn}` (the turn that stays the last
   * one); `ifLastTurn` refuses it (412) when another turn ended since; `stopRunning` stops a
   * running turn first (else 409), and rolls it back with them. Answers the turns rolled back.
   * The rollback gets an id when the caller gives none, so sending it again is safe.
   */
  rollback(key: string, body: RollbackBody, options: WriteOptions = {}): Promise<RollbackAnswer> {
    return this.write(key, 'POST', '/rollback', { ...body, id: body.id ?? newId() }, options);
  }

  /**
   * Forks the conversation `key` into a new one, `into`, whose history is this one's up to and
   * including `atTurn` (absent: the latest turn that ended). Answers the new key and the turn.
   * The fork gets an id when the caller gives none, so sending it again is safe (it forks once).
   */
  fork(key: string, body: ForkBody, options: WriteOptions = {}): Promise<ForkAnswer> {
    return this.write(key, 'POST', '/fork', { ...body, id: body.id ?? newId() }, options);
  }

  /**
   * Moves a pending follow-up just before another input waiting in the queue (`before`), or to
   * the end (`null`). Answers its place now. The move gets an id when the caller gives none, so
   * sending it again is safe.
   */
  move(key: string, input: string, before: string | null, options: WriteOptions & { id?: string } = {}): Promise<MoveAnswer> {
    const { id, ...rest } = options;
    return this.write(key, 'POST', `/inputs/${encodeURIComponent(input)}/move`, { before, id: id ?? newId() }, rest);
  }

  /**
   * Makes a schedule: a message sent into the conversation at `at`, or by cron (`every`, read in
   * `tz`), as this caller's chat or steer. Its id (the caller's, or one made here) is the
   * schedule's, so sending it again is safe.
   */
  schedule(key: string, body: ScheduleBody, options: WriteOptions = {}): Promise<ScheduleItem> {
    return this.write(key, 'POST', '/schedules', { ...body, id: body.id ?? newId() }, options);
  }

  /** The conversation's schedules, each with its next time and when it last fired. */
  schedules(key: string, options: ReadOptions = {}): Promise<SchedulesAnswer> {
    return this.read(key, '/schedules', options);
  }

  /** Changes a schedule (the fields given; `at` and `every` replace each other): answers it as it is now. */
  reschedule(key: string, schedule: string, body: ScheduleChangeBody, options: WriteOptions = {}): Promise<ScheduleItem> {
    return this.write(key, 'PATCH', `/schedules/${encodeURIComponent(schedule)}`, { ...body, id: body.id ?? newId() }, options);
  }

  /** Cancels a schedule: it fires no more. */
  cancelSchedule(key: string, schedule: string, options: WriteOptions = {}): Promise<{ id: string; cancelled: true }> {
    return this.write(key, 'DELETE', `/schedules/${encodeURIComponent(schedule)}`, undefined, options);
  }

  /** Turns a pending follow-up into a steer of the running turn. */
  promote(key: string, input: string, options: WriteOptions = {}): Promise<SteerAnswer> {
    return this.write(key, 'POST', `/inputs/${encodeURIComponent(input)}/promote`, {}, options);
  }

  /** The owner gives `subject` read or write access. */
  grant(key: string, subject: string, access: 'read' | 'write', options: WriteOptions = {}): Promise<GrantAnswer> {
    return this.write(key, 'PUT', `/grants/${encodeURIComponent(subject)}`, { access }, options);
  }

  /** The owner takes `subject`'s access back (`access: null`). */
  revoke(key: string, subject: string, options: WriteOptions = {}): Promise<GrantAnswer> {
    return this.write(key, 'DELETE', `/grants/${encodeURIComponent(subject)}`, undefined, options);
  }

  /**
   * Approves a tool call waiting for approval (its `approvalId`: the status's `awaiting`, the
   * `approval.requested` event): it runs, with `arguments` when given (an edited version its
   * tool's schema must accept). Final: the same decision again answers the same; another is 409.
   */
  approve(key: string, approvalId: string, body: { arguments?: Record<string, unknown>; reason?: string } = {}, options: WriteOptions = {}): Promise<ApprovalDecision> {
    return this.write(key, 'POST', `/approvals/${encodeURIComponent(approvalId)}`, { decision: 'approve', ...body }, options);
  }

  /** Denies a tool call waiting for approval: it never runs, and the model reads `denied by the user: <reason>`. */
  deny(key: string, approvalId: string, body: { reason?: string } = {}, options: WriteOptions = {}): Promise<ApprovalDecision> {
    return this.write(key, 'POST', `/approvals/${encodeURIComponent(approvalId)}`, { decision: 'deny', ...body }, options);
  }

  status(key: string, options: ReadOptions = {}): Promise<ConversationStatus> {
    return this.read(key, '', options);
  }

  /**
   * One page of the transcript, oldest first; pass `next` as `after` for the following one.
   * `include: 'rolledBack'` shows the rows of rolled-back turns too (each `rolledBack: true`).
   */
  messages(key: string, page: { after?: string; limit?: number; include?: 'rolledBack' } = {}, options: ReadOptions = {}): Promise<TranscriptPage> {
    const query = new URLSearchParams();
    if (page.after !== undefined) query.set('after', page.after);
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.include !== undefined) query.set('include', page.include);
    const text = query.toString();
    return this.read(key, `/messages${text ? `?${text}` : ''}`, options);
  }

  turn(key: string, turn: string, options: ReadOptions = {}): Promise<TurnView> {
    return this.read(key, `/turns/${encodeURIComponent(turn)}`, options);
  }

  /** The turn that answered or took an input (404 `not_found` until one did). */
  turnOf(key: string, input: string, options: ReadOptions = {}): Promise<TurnView> {
    return this.read(key, `/turns?input=${encodeURIComponent(input)}`, options);
  }

  /**
   * At most `n` (1-5, default 3) short next messages in the user's voice, to offer as buttons;
   * send the one clicked as an ordinary `chat`. Empty when no turn has ended yet or they could
   * not be made (never an error for that).
   */
  followups(key: string, options: { n?: number } & ReadOptions = {}): Promise<Followups> {
    return this.read(key, `/followups${options.n === undefined ? '' : `?n=${options.n}`}`, options);
  }

  /** Two or three sentences on where the conversation stood, for a person returning to it; empty when none could be made. */
  recap(key: string, options: ReadOptions = {}): Promise<Recap> {
    return this.read(key, '/recap', options);
  }

  /** The agent's plan (its `todos`), as of `position`; empty when its agent keeps none. */
  todos(key: string, options: ReadOptions = {}): Promise<Todos> {
    return this.read(key, '/todos', options);
  }

  /**
   * Follows the agent's plan: calls `listener` with the plan as it is now, then with the whole
   * list at each change (`todos.updated` on the stream after the position it was read at, so no
   * change is missed or shown twice), until `signal` aborts; then it resolves. It rejects with
   * the `RudderError` of a read or a stream that cannot go on (403, 404…).
   */
  async onTodos(key: string, listener: (items: TodoItem[]) => void, options: { signal?: AbortSignal } = {}): Promise<void> {
    const now = await this.todos(key, options);
    listener(now.items);
    for await (const event of this.events(key, { after: now.position, signal: options.signal })) {
      if (event.type === 'todos.updated') listener(event.data.items);
    }
  }

  /**
   * The conversation's events, reconnecting by itself with `Last-Event-ID` (see `eventStream`).
   * Each stored event it yields raises the position this client's reads of `key` ask for.
   */
  events(key: string, options: EventsOptions = {}): AsyncIterable<StreamEvent> {
    const stream = eventStream(
      async (headers, signal) => this.fetch(this.url(key, '/events'), { headers: { accept: 'text/event-stream', ...(await this.auth()), ...headers }, signal }),
      options,
      // Without `after`, where a cut before the first event resumes: the status's position (404, nothing folded yet: 0).
      (signal) =>
        this.status(key, { signal }).then(
          (status) => status.position,
          (error: unknown) => {
            if (error instanceof RudderError && error.status === 404) return 0;
            throw error;
          },
        ),
    );
    return this.seen(key, stream);
  }

  /** The latest position this client's writes to `key` were answered with, or its events showed (0: none yet). */
  positionOf(key: string): number {
    return this.positions.get(key) ?? 0;
  }

  private note(key: string, position: number): void {
    if (Number.isSafeInteger(position)) this.positions.set(key, Math.max(this.positionOf(key), position));
  }

  private async *seen(key: string, stream: AsyncIterable<StreamEvent>): AsyncGenerator<StreamEvent, void, undefined> {
    for await (const event of stream) {
      if (event.type !== 'token') this.note(key, event.position);
      yield event;
    }
  }

  private url(key: string, rest: string): string {
    return `${this.baseUrl}/v1/conversations/${encodeURIComponent(key)}${rest}`;
  }

  private async auth(): Promise<Record<string, string>> {
    const token = typeof this.options.token === 'function' ? await this.options.token() : this.options.token;
    return token ? { authorization: `Bearer ${token}` } : {};
  }

  private async write<T>(key: string, method: string, rest: string, body: unknown, options: WriteOptions): Promise<T> {
    const response = await this.fetch(this.url(key, rest), {
      method,
      headers: { ...(await this.auth()), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
    });
    if (!response.ok) throw await errorOf(response);
    this.note(key, Number(response.headers.get('rudder-position') ?? NaN));
    return (await response.json()) as T;
  }

  private async read<T>(key: string, rest: string, options: ReadOptions): Promise<T> {
    const position = this.positionOf(key);
    const response = await this.fetch(this.url(key, rest), {
      headers: { ...(await this.auth()), ...(position > 0 ? { 'rudder-min-position': String(position) } : {}) },
      signal: options.signal,
    });
    if (!response.ok) throw await errorOf(response);
    return (await response.json()) as T;
  }
}

export const createRudderClient = (options: RudderClientOptions): RudderClient => new RudderClient(options);

/** A random UUID; `crypto.randomUUID` is missing in a page served over plain HTTP from another host than localhost. */
const newId = (): string => {
  if (typeof globalThis.crypto.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
