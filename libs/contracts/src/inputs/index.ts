import { z } from 'zod';
import { joinEventContracts } from '../event-parts';
import { APPROVAL } from './approval';
import { CHAT } from './chat';
import { EDIT } from './edit';
import { FORK } from './fork';
import { GRANT } from './grant';
import { MOVE } from './move';
import { PROMOTE } from './promote';
import { RETRACT } from './retract';
import { ROLLBACK } from './rollback';
import { SCHEDULE } from './schedule';
import { STEER } from './steer';
import { STOP } from './stop';

export * from './approval';
export * from './chat';
export * from './edit';
export * from './fork';
export * from './grant';
export * from './move';
export * from './promote';
export * from './retract';
export * from './rollback';
export * from './schedule';
export * from './steer';
export * from './stop';

/**
 * The input kinds, one module of `inputs/` each (`inputs/<kind>.ts`): its record on
 * `agent.inputs`, its HTTP body and answer, and the events it declares. A new kind is its
 * module and its line here; the record union, the event types and the input ids they name
 * follow from this table.
 */
export const INPUT_KIND_CONTRACTS = {
  chat: CHAT,
  steer: STEER,
  stop: STOP,
  retract: RETRACT,
  promote: PROMOTE,
  grant: GRANT,
  approval: APPROVAL,
  edit: EDIT,
  rollback: ROLLBACK,
  move: MOVE,
  fork: FORK,
  schedule: SCHEDULE,
} as const;

type Kinds = typeof INPUT_KIND_CONTRACTS;
type RecordSchema = Kinds[keyof Kinds]['record'];

/** Records on `agent.inputs`: one of the kinds' (`type` names the kind). */
export const InputRecord = z.discriminatedUnion('type', Object.values(INPUT_KIND_CONTRACTS).map((kind) => kind.record) as unknown as [RecordSchema, ...RecordSchema[]]);
export type InputRecord = z.infer<typeof InputRecord>;
export type InputKind = InputRecord['type'];

/** The event types kind `K` declares (every kind's, for the union of kinds). */
export type KindEventType<K extends InputKind = InputKind> = K extends InputKind ? keyof Kinds[K]['events'] & string : never;

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
/** Every kind's event contracts, by type. */
export type KindEventContracts = UnionToIntersection<Kinds[InputKind]['events']>;

/** The events the kinds declare, by type, as one table (a type declared by two kinds is refused at load). */
export const KIND_EVENT_CONTRACTS = joinEventContracts(Object.values(INPUT_KIND_CONTRACTS).map((kind) => kind.events)) as unknown as KindEventContracts;

/** Which kind declares each of the kinds' event types: its decisions make it. */
export const KIND_OF_EVENT = Object.fromEntries(
  (Object.entries(INPUT_KIND_CONTRACTS) as [InputKind, Kinds[InputKind]][]).flatMap(([kind, contract]) => Object.keys(contract.events).map((type) => [type, kind])),
) as { readonly [T in KindEventType]: InputKind };

/** The user messages an input brings: a chat's messages, a steer's text, none for the controls. */
export const messagesOf = (input: InputRecord): string[] =>
  input.type === 'chat' ? input.messages : input.type === 'steer' ? [input.text] : [];

/** The text a model and a reader see for an input of several messages. */
export const inputText = (messages: readonly string[]): string => messages.join('\n\n');
