import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { NO_CONTEXT, type ConversationEvent, type TranscriptPage, type TurnView } from '@rudder/contracts';
import type { z } from 'zod';
import type { CompanionStatus, InputState, Rejection } from '../../../apps/gateway/src/companion/companion-client';

/** A status as the companion sends it: fields with a default (a pending input's `revision`, …) may be left out. */
type SentStatus = Partial<z.input<typeof CompanionStatus>>;

/** How long a read asking for a position the stub's view has not reached waits for it (`setPosition`). */
const FLOOR_WAIT_MS = 5000;

type Input = {
  id: string;
  kind: 'chat' | 'steer';
  text: string;
  messages: string[];
  subject: string;
  /** The worker's decision on a steer (null: none yet, or a chat). */
  steer: { turn: string | null; landed: boolean } | null;
  /** Where the input is, and why it was refused. */
  state: InputState;
  rejection: Rejection | null;
};

/** What a test may say about an input it adds: a chat by default, pending, undecided, not refused unless given. */
export type StubInput = {
  id: string;
  messages: string[];
  subject?: string;
  kind?: 'chat' | 'steer';
  steer?: { turn: string | null; landed: boolean } | null;
  state?: InputState;
  rejection?: Rejection | null;
  /** Where its acceptance is in the log. */
  position?: number;
};

/**
 * A stand-in for the companion's internal read API, for the gateway's own tests only (the
 * full-stack tests use the real companion). It answers from in-memory maps the test fills,
 * like the companion: an unknown conversation is an idle one without owner, one the test gave
 * a transcript or turns is owned by `anonymous` (the subject of open mode) unless `setStatus`
 * says otherwise, anything else unknown is 404 `{error: {code, message}}`. `requests` records every path asked for.
 */
export type CompanionStub = {
  url: string;
  requests: string[];
  /** Sets the owner (and optionally more) of a conversation's status. */
  setStatus(key: string, status: SentStatus): void;
  /** An input the worker decided on: a chat by default; a steer with `kind: 'steer'` and its `steer` decision. */
  addInput(key: string, input: StubInput): void;
  addEvents(key: string, events: ConversationEvent[]): void;
  setTranscript(key: string, page: TranscriptPage): void;
  addTurn(key: string, turn: TurnView): void;
  /**
   * The position the companion's view of the conversation has folded to: sent as `rudder-position`
   * on every answer about it, as the companion does; and a read asking for a later one
   * (`rudder-min-position`) waits until it is set that far, as the companion waits for its fold
   * (503 after `FLOOR_WAIT_MS`). A conversation never given one waits for nothing.
   */
  setPosition(key: string, position: number): void;
  /** While true, every request is answered 500 (a companion in trouble). */
  failing: boolean;
  stop(): Promise<void>;
};

export async function startCompanionStub(): Promise<CompanionStub> {
  const statuses = new Map<string, SentStatus>();
  const inputs = new Map<string, Input>();
  const events = new Map<string, ConversationEvent[]>();
  const transcripts = new Map<string, TranscriptPage>();
  const turns = new Map<string, TurnView[]>();
  const positions = new Map<string, number>();
  const requests: string[] = [];
  /** Conversations the test gave a transcript or turns: somebody wrote to them. */
  const written = new Set<string>();
  const notFound = (message: string) => ({ status: 404, body: { error: { code: 'not_found', message } } });

  const answer = (path: string, query: URLSearchParams): { status: number; body: unknown } => {
    const segments = path.split('/').slice(1).map(decodeURIComponent);
    if (segments[0] !== 'conversations' || segments.length < 2) return notFound(`no route ${path}`);
    const key = segments[1];
    const [, , resource, id] = segments;
    if (resource === undefined) {
      return { status: 200, body: { key, running: null, steering: [], queue: [], lastInputId: null, agent: null, context: NO_CONTEXT, owner: written.has(key) ? 'anonymous' : null, grants: [], ...statuses.get(key) } };
    }
    if (resource === 'inputs' && id !== undefined) {
      const input = inputs.get(`${key}\n${id}`);
      // Not found: where the view was without it, as the companion says.
      if (!input) return { status: 404, body: { error: { code: 'not_found', message: `conversation ${key} has no input ${id}`, details: { position: positions.get(key) ?? 0 } } } };
      return { status: 200, body: input };
    }
    if (resource === 'events') {
      const after = Number(query.get('after') ?? -1);
      const limit = Number(query.get('limit') ?? 500);
      const items = (events.get(key) ?? []).filter((e) => e.position > after).slice(0, limit);
      return { status: 200, body: { items } };
    }
    if (resource === 'messages') return { status: 200, body: transcripts.get(key) ?? { items: [], next: null } };
    if (resource === 'turns' && id !== undefined) {
      const turn = turns.get(key)?.find((t) => t.id === id);
      return turn ? { status: 200, body: turn } : notFound(`conversation ${key} has no turn ${id}`);
    }
    if (resource === 'turns') {
      const input = query.get('input');
      const turn = turns.get(key)?.find((t) => t.prompt.id === input || t.steered.some((s) => s.id === input));
      return turn ? { status: 200, body: turn } : notFound(`no turn has answered or taken input ${input} yet`);
    }
    return notFound(`no route ${path}`);
  };

  /** Whether the view of `key` reaches `min` within `FLOOR_WAIT_MS` (at once when no position was set for it). */
  const folded = async (key: string, min: number): Promise<boolean> => {
    const deadline = Date.now() + FLOOR_WAIT_MS;
    while ((positions.get(key) ?? Number.POSITIVE_INFINITY) < min) {
      if (Date.now() > deadline) return false;
      await sleep(10);
    }
    return true;
  };

  let stub: CompanionStub;
  const server: Server = createServer((request, response) => void respond(request, response));
  const respond = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://stub');
    stub.requests.push(url.pathname + url.search);
    const key = url.pathname.startsWith('/conversations/') ? decodeURIComponent(url.pathname.split('/')[2] ?? '') : undefined;
    const min = Number(request.headers['rudder-min-position'] ?? 0);
    const behind = key !== undefined && !(await folded(key, min));
    const { status, body } = stub.failing
      ? { status: 500, body: { error: { code: 'internal', message: 'the companion failed to answer' } } }
      : behind
        ? { status: 503, body: { error: { code: 'unavailable', message: `the read view of ${key} is not yet at ${min}; try again` } } }
        : answer(url.pathname, url.searchParams);
    const position = key === undefined ? undefined : positions.get(key);
    response.writeHead(status, { 'content-type': 'application/json', ...(position === undefined || status >= 400 ? {} : { 'rudder-position': String(position) }) });
    response.end(JSON.stringify(body));
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  stub = {
    url: `http://127.0.0.1:${port}`,
    requests,
    failing: false,
    setStatus: (key, status) => statuses.set(key, { ...statuses.get(key), ...status }),
    addInput: (key, input) => {
      inputs.set(`${key}\n${input.id}`, {
        id: input.id,
        kind: input.kind ?? 'chat',
        text: input.messages.join('\n\n'),
        messages: input.messages,
        subject: input.subject ?? 'anonymous',
        steer: input.steer ?? null,
        state: input.state ?? 'pending',
        rejection: input.rejection ?? null,
        ...(input.position === undefined ? {} : { position: input.position }),
      });
    },
    addEvents: (key, added) => {
      events.set(key, [...(events.get(key) ?? []), ...added].sort((a, b) => a.position - b.position));
    },
    setTranscript: (key, page) => {
      written.add(key);
      transcripts.set(key, page);
    },
    addTurn: (key, turn) => {
      written.add(key);
      turns.set(key, [...(turns.get(key) ?? []), turn]);
    },
    setPosition: (key, position) => positions.set(key, position),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return stub;
}
