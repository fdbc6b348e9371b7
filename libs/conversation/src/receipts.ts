import { inputDigest, inputText, type DomainEvent, type EventDataOf, type EventType, type InputKind, type InputRecord, type MessageKind, type Rejection } from '@rudder/contracts';

/** An input of one kind. */
export type InputOf<K extends InputKind> = Extract<InputRecord, { type: K }>;

/** What the worker's decision gives each kind of input that it asked for. */
export type ReceiptAnswers = {
  /** A chat taken into the log, `ahead` inputs before it (0: it starts next). */
  chat: { ahead: number };
  /** Where a steer goes: `landed` means `turn` shows it to the model before it ends. */
  steer: { turn: string | null; landed: boolean };
  /** The turn a stop stopped (null when none ran, or the one it names no longer runs). */
  stop: { turn: string | null };
  /** The pending input a retraction took back. */
  retract: { id: string; text: string };
  /** The steer decision on the promoted follow-up. */
  promote: { turn: string | null; landed: boolean };
  /** The access the grantee has now (null once revoked). */
  grant: { subject: string; access: 'read' | 'write' | null };
  /** The decision on the call, as stored. */
  approval: ApprovalDecision;
};

/** A call's approval as decided (`approval.decided`, less the input that decided it). */
export type ApprovalDecision = Omit<EventDataOf<'approval.decided'>, 'input'>;

/** How the worker refused each kind of input: a chat's or steer's reason, a control's code. */
export type ReceiptRefusals = {
  chat: Rejection;
  steer: Rejection;
  stop: EventDataOf<'stop.refused'>['code'];
  retract: EventDataOf<'retract.refused'>['code'];
  promote: EventDataOf<'promote.refused'>['code'];
  grant: EventDataOf<'grant.refused'>['code'];
  approval: Pick<EventDataOf<'approval.refused'>, 'code' | 'message'>;
};

/**
 * What an event says of an input: it was answered (`answer`) or refused (`refusal`) — either
 * is final, the same input sent again gets the same — or its id is another input's (`reused`:
 * sent before with another kind or text), or its guard failed (`guardFailed`, its reason):
 * nothing was decided, and the same id sent again is guarded and decided again.
 */
export type Outcome<K extends InputKind> =
  | { answer: ReceiptAnswers[K] }
  | { refusal: ReceiptRefusals[K] }
  | { reused: true }
  | { guardFailed: string };

/** How one event type answers one input kind. */
type Reading<K extends InputKind, T extends EventType> = {
  /** The input id the event names (in its data). */
  names(data: EventDataOf<T>): string;
  /** Which id of the input that is: its own (when absent), or another it is about (a promotion's target). */
  of?(input: InputOf<K>): string;
  /**
   * Whether the event settles the input for good: stored, the input was handled and adds
   * nothing when it comes again (the worker's receipt keys, `receiptKeys`). A failed guard
   * does not: the id stays open for the next try.
   */
  settles: boolean;
  /** It answers only a send it follows, never one after it (a failed guard: the next send is guarded again). */
  liveOnly?: true;
  /** The outcome it gives `input`; undefined when it is no answer yet (a steer's acceptance: its answer is the `steer.accepted` with it). */
  read(data: EventDataOf<T>, input: InputOf<K>): Outcome<K> | undefined;
};

type Readings<K extends InputKind> = { readonly [T in EventType]?: Reading<K, T> };

const REUSED = { reused: true } as const;
const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((text, i) => text === b[i]);

/** A chat's or steer's refusal: this input when its kind and text's digest are this input's (`input.rejected` keeps no text). */
const rejectedAs = <K extends MessageKind>(kind: K, textOf: (input: InputOf<K>) => string): Reading<K, 'input.rejected'> => ({
  names: (data) => data.input.id,
  settles: true,
  read: (data, input) =>
    data.input.kind === kind && data.input.digest === inputDigest(textOf(input)) ? { refusal: { code: data.code, message: data.message } } : REUSED,
});

/** Chat and steer alike: their guard failed, which decides nothing; under another kind, the id is another input's. */
const guardFailed = <K extends MessageKind>(kind: K): Reading<K, 'guard.failed'> => ({
  names: (data) => data.input.id,
  settles: false,
  liveOnly: true,
  read: (data) => (data.input.kind === kind ? { guardFailed: data.message } : REUSED),
});

/**
 * The receipts: for each input kind, the events that answer it, how each names the input,
 * and what each says of it. The worker's decisions make them (`decideInputs`: each decision
 * on an input holds one of its settling events), the gateway waits for them (one per request
 * it sends) and finds them among recent events by the ids they name (`receiptIds`).
 */
export const RECEIPTS: { readonly [K in InputKind]: Readings<K> } = {
  chat: {
    'input.accepted': {
      names: (data) => data.input.id,
      settles: true,
      // `ahead` is absent only on events stored before the worker recorded it.
      read: (data, input) => (data.input.kind === 'chat' && sameList(data.input.messages, input.messages) ? { answer: { ahead: data.ahead ?? 0 } } : REUSED),
    },
    'input.rejected': rejectedAs('chat', (input) => inputText(input.messages)),
    'guard.failed': guardFailed('chat'),
  },
  steer: {
    // This steer's acceptance: its answer is the steer.accepted that comes with it.
    'input.accepted': {
      names: (data) => data.input.id,
      settles: true,
      read: (data, input) => (data.input.kind === 'steer' && data.input.text === input.text ? undefined : REUSED),
    },
    'steer.accepted': {
      names: (data) => data.input.id,
      // Written with the steer's `input.accepted`, which is the once key that settles it.
      settles: false,
      read: (data, input) => (data.input.text === input.text ? { answer: { turn: data.turn, landed: data.landed } } : REUSED),
    },
    'input.rejected': rejectedAs('steer', (input) => input.text),
    'guard.failed': guardFailed('steer'),
  },
  stop: {
    'stop.requested': { names: (data) => data.stop, settles: true, read: (data) => ({ answer: { turn: data.turn } }) },
    'stop.refused': { names: (data) => data.stop, settles: true, read: (data) => ({ refusal: data.code }) },
  },
  retract: {
    'input.retracted': { names: (data) => data.retract, settles: true, read: (data) => ({ answer: { id: data.input.id, text: data.input.text } }) },
    'retract.refused': { names: (data) => data.retract, settles: true, read: (data) => ({ refusal: data.code }) },
  },
  promote: {
    'promote.refused': { names: (data) => data.promote, settles: true, read: (data) => ({ refusal: data.code }) },
    // The promoted follow-up's steer decision (or the one it had already, sent as a steer or promoted before).
    'steer.accepted': { names: (data) => data.input.id, of: (input) => input.target, settles: true, read: (data) => ({ answer: { turn: data.turn, landed: data.landed } }) },
  },
  grant: {
    'access.granted': { names: (data) => data.grant, settles: true, read: (data) => ({ answer: { subject: data.subject, access: data.access } }) },
    'grant.refused': { names: (data) => data.grant, settles: true, read: (data) => ({ refusal: data.code }) },
  },
  approval: {
    // A decision by a timeout names no input: it is no receipt of any.
    'approval.decided': { names: (data) => data.input ?? '', settles: true, read: ({ input: _input, ...decision }) => ({ answer: decision }) },
    'approval.refused': { names: (data) => data.input, settles: true, read: ({ code, message }) => ({ refusal: { code, message } }) },
  },
};

/** The readings of one kind, for code generic over kinds (a reading's `read` and `names` take its own event type's data). */
const readingsOf = <K extends InputKind>(kind: K): Readonly<Partial<Record<EventType, Reading<K, EventType>>>> => RECEIPTS[kind] as Readings<K>;

/**
 * What `event` says of `input`, when it is one of its receipts naming it; undefined otherwise.
 * `live`: the event came after the input was sent (else it is one from before: a failed guard
 * then answered an earlier send, not this one).
 */
export function receiptOf<K extends InputKind>(input: InputOf<K>, event: DomainEvent, live?: boolean): Outcome<K> | undefined;
export function receiptOf(input: InputRecord, event: DomainEvent, live?: boolean): Outcome<InputKind> | undefined;
export function receiptOf<K extends InputKind>(input: InputOf<K>, event: DomainEvent, live = true): Outcome<K> | undefined {
  const reading = readingsOf<K>(input.type as K)[event.type];
  if (reading === undefined || (reading.liveOnly && !live)) return undefined;
  if (reading.names(event.data) !== (reading.of?.(input) ?? input.id)) return undefined;
  return reading.read(event.data, input);
}

/** The ids an input's receipts name: its own, and for a promotion its target's. */
export function receiptIdsOf(input: InputRecord): string[] {
  const ids = Object.values(readingsOf(input.type)).map((reading) => reading?.of?.(input) ?? input.id);
  return [...new Set(ids)];
}

/** For each event type, how it names the inputs it may be a receipt of. */
const NAMERS = new Map<string, ((data: unknown) => string)[]>();
for (const readings of Object.values(RECEIPTS)) {
  for (const [type, reading] of Object.entries(readings as Readings<InputKind>)) {
    const namers = NAMERS.get(type) ?? [];
    namers.push((reading as Reading<InputKind, EventType>).names as (data: unknown) => string);
    NAMERS.set(type, namers);
  }
}

/** The ids of the inputs `event` may be a receipt of (the ids a request waiting for it sent), each once. */
export function receiptIds(event: { type: string; data: unknown }): string[] {
  const ids: string[] = [];
  for (const names of NAMERS.get(event.type) ?? []) {
    const id = names(event.data);
    if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** The event types that settle an input of this kind (the worker's receipt keys are theirs). */
export const settlingTypes = (kind: InputKind): EventType[] =>
  (Object.entries(RECEIPTS[kind]) as [EventType, Reading<InputKind, EventType>][]).filter(([, reading]) => reading.settles).map(([type]) => type);
