import {
  CompanionApproval,
  CompanionInput,
  CompanionStatus,
  ConversationEventRecord,
  ErrorStatus,
  FollowupsAnswer,
  RecapAnswer,
  type Followups,
  type Recap,
  type ConversationEvent,
  type ErrorCode,
} from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import { z } from 'zod';
import { noteViewPosition, Positions, requestedPosition } from '../consistency/positions';
import { GatewayError } from '../errors/gateway-error';
import { OutageLog } from '../errors/outage-log';

export { CompanionApproval, CompanionInput, CompanionStatus, InputState, Rejection } from '@rudder/contracts';

/** `/events` pages: `{items, next}` like the transcript (a bare array is accepted too). */
const EventsPage = z.union([z.object({ items: z.array(z.unknown()) }).loose(), z.array(z.unknown())]);
const EVENTS_PAGE_SIZE = 500;
/**
 * How long the gateway waits for a follow-up or a recap: the companion bounds its own wait (its
 * model request's AFFORDANCE_TIMEOUT_MS, at most 10 s, and another companion's request in flight)
 * and answers empty past it, so this only catches a companion that does not answer at all.
 */
const AFFORDANCE_TIMEOUT_MS = 30_000;

const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ErrorStatus, code);
const CompanionError = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }),
});

/**
 * Client of the companion's internal HTTP API (the read side). Paths mirror the public ones
 * without `/v1`; keys and ids are URL-encoded. The companion's own client errors (404 with
 * `{error: {code, message}}`) are passed on as they are; a companion that does not answer,
 * answers 5xx or answers something unreadable is `unavailable` (503).
 */
export class CompanionClient {
  private readonly outage: OutageLog;

  constructor(
    private readonly baseUrl: string,
    private readonly log: Log,
    private readonly positions: Positions = new Positions(),
    /** COMPANION_TOKEN: sent on every request (`authorization: Bearer`); a companion bound beyond loopback requires it. */
    private readonly token: string | undefined = undefined,
    private readonly timeoutMs = 8000,
  ) {
    this.outage = new OutageLog(log, 'the companion');
  }

  /** The conversation's status, once the companion has folded it at least up to `floor` (and the writes this gateway answered). */
  async status(key: string, floor = 0): Promise<CompanionStatus> {
    return this.parse(CompanionStatus, await this.get(conversationPath(key), key, floor), 'status');
  }

  /** The input with this id, or null when the companion has not seen it. */
  async input(key: string, id: string): Promise<CompanionInput | null> {
    const found = await this.inputOrPosition(key, id);
    return 'unseenUpTo' in found ? null : found;
  }

  /**
   * The input with this id; or, when the companion has not seen it, the position its view of the
   * conversation had reached without it (0 from a companion that does not say): the input, if
   * it exists, was accepted or refused after that position.
   */
  async inputOrPosition(key: string, id: string): Promise<CompanionInput | { unseenUpTo: number }> {
    try {
      const answer = await this.get(`${conversationPath(key)}/inputs/${segment(id)}`, key);
      return this.parse(CompanionInput, answer, 'input');
    } catch (error) {
      if (!(error instanceof GatewayError && error.code === 'not_found')) throw error;
      const position = isRecord(error.details) ? error.details.position : undefined;
      return { unseenUpTo: typeof position === 'number' && Number.isSafeInteger(position) && position >= 0 ? position : 0 };
    }
  }

  /** The call's approval with this id, or null when the companion has not seen it. */
  async approval(key: string, approvalId: string): Promise<CompanionApproval | null> {
    try {
      const answer = await this.get(`${conversationPath(key)}/approvals/${segment(approvalId)}`, key);
      return this.parse(CompanionApproval, answer, 'approval');
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'not_found') return null;
      throw error;
    }
  }

  /** A transcript page, as the companion answers it (`TranscriptPage`). */
  messages(key: string, query: { after?: string; limit?: number; include?: 'rolledBack' }): Promise<unknown> {
    return this.get(`${conversationPath(key)}/messages${queryString(query)}`, key);
  }

  /** One turn, as the companion answers it (`TurnView`). */
  turn(key: string, turn: string): Promise<unknown> {
    return this.get(`${conversationPath(key)}/turns/${segment(turn)}`, key);
  }

  /** The turn that answered or took an input (`TurnView`). */
  turnOfInput(key: string, input: string): Promise<unknown> {
    return this.get(`${conversationPath(key)}/turns${queryString({ input })}`, key);
  }

  /** The first `n` follow-up suggestions of the conversation as the companion makes them (empty when it could not). */
  async followups(key: string, n: number): Promise<Followups> {
    const answer = await this.get(`${conversationPath(key)}/followups${queryString({ n })}`, key, 0, AFFORDANCE_TIMEOUT_MS);
    return this.parse(FollowupsAnswer, answer, 'followups');
  }

  /** The conversation's recap as the companion makes it (empty when it could not). */
  async recap(key: string): Promise<Recap> {
    return this.parse(RecapAnswer, await this.get(`${conversationPath(key)}/recap`, key, 0, AFFORDANCE_TIMEOUT_MS), 'recap');
  }

  /**
   * The stored events of the conversation after `position`, oldest first, a page at a time
   * (a replay never holds a long history in memory at once), once the companion has folded
   * the conversation at least up to `floor`: so none is missing up to there. Records that do
   * not parse as a `ConversationEvent` are left out (and logged).
   */
  async *eventPages(key: string, position: number, floor = 0): AsyncGenerator<ConversationEvent[]> {
    let after = position;
    for (;;) {
      const answer = await this.get(`${conversationPath(key)}/events${queryString({ after: String(after), limit: EVENTS_PAGE_SIZE })}`, key, floor);
      const page = this.parse(EventsPage, answer, 'events');
      const items = Array.isArray(page) ? page : page.items;
      const events: ConversationEvent[] = [];
      for (const item of items) {
        const parsed = ConversationEventRecord.safeParse(item);
        if (parsed.success) events.push(parsed.data);
        else this.log.warn('companion sent an event that does not parse; left out', { key, issues: parsed.error.issues });
      }
      if (events.length > 0) yield events;
      const last = events.at(-1)?.position;
      if (items.length < EVENTS_PAGE_SIZE || last === undefined || last <= after) return;
      after = last;
    }
  }

  /**
   * GET from the companion. For a conversation's route, the view must reflect at least the
   * writes this gateway answered for it, the position the client asked for (read your
   * writes) and `floor`: the companion waits for it, bounded.
   */
  private async get(path: string, key?: string, floor = 0, timeoutMs = this.timeoutMs): Promise<unknown> {
    const min = key === undefined ? 0 : Math.max(this.positions.get(key), requestedPosition(), floor);
    // A position the client asked for: refused at once when beyond the log, else (if this
    // gateway has not seen it yet) one wait shared by every read asking for it (ProducedPositions).
    if (key !== undefined) await this.positions.produced.reach(requestedPosition());
    let response: Response;
    try {
      response = await fetch(this.baseUrl + path, {
        headers: {
          accept: 'application/json',
          ...(this.token === undefined ? {} : { authorization: `Bearer ${this.token}` }),
          ...(min > 0 ? { 'rudder-min-position': String(min) } : {}),
        },
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      this.outage.failed(error, { path });
      throw new GatewayError('unavailable', 'the companion (read side) is not answering; try again shortly', { companion: 'unavailable' });
    }
    const body: unknown = await response.json().catch(() => undefined);
    const error = CompanionError.safeParse(body);
    // How far the companion's view of the conversation had folded when it answered (see ReadFloorInterceptor).
    const viewed = Number(response.headers.get('rudder-position'));
    if (key !== undefined && Number.isSafeInteger(viewed) && viewed > 0) {
      noteViewPosition(viewed);
      this.positions.produced.saw(viewed);
    }
    // The companion refused this gateway's service token: a configuration fault, not the client's.
    if (response.status === 401 || response.status === 403) {
      this.outage.failed(new Error(`the companion refused the service token (${response.status}): set the same COMPANION_TOKEN on the gateway and the companion`), { path });
      throw new GatewayError('unavailable', 'the companion (read side) refused this gateway; try again shortly', { companion: 'unauthorized' });
    }
    if (response.status < 500) this.outage.answered();
    if (response.ok) return body;
    if (response.status < 500 && error.success) {
      const { code, message, details } = error.data.error;
      if (isErrorCode(code)) throw new GatewayError(code, message, details);
    }
    // The companion is up but cannot answer: pass on what it says is down (its database, say).
    this.outage.failed(new Error(error.success ? error.data.error.message : `answered ${response.status}`), { path, status: response.status });
    const down = error.success && isRecord(error.data.error.details) ? error.data.error.details : {};
    const reason = error.success && error.data.error.code === 'unavailable' ? `: ${error.data.error.message}` : ` (it answered ${response.status})`;
    throw new GatewayError('unavailable', `the companion (read side) cannot answer${reason}; try again shortly`, { companion: 'unavailable', ...down });
  }

  private parse<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    this.log.error(`companion answered an unexpected ${what}`, { issues: parsed.error.issues });
    throw new GatewayError('unavailable', `the companion (read side) answered an unreadable ${what}`);
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const conversationPath = (key: string): string => `/conversations/${segment(key)}`;

/**
 * One path segment of the companion's API. `.` and `..` are refused here too (the edge
 * refuses them first): `fetch` resolves them, so `..` as a turn id would read the status.
 */
function segment(value: string): string {
  if (value === '.' || value === '..') throw new GatewayError('bad_request', `"${value}" is not a key or id`);
  return encodeURIComponent(value);
}

function queryString(query: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}
