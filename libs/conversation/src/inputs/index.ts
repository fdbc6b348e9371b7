import type { InputKind, InputRecord } from '@rudder/contracts';
import type { ConversationState } from '../state';
import { approvalRules } from './approval';
import { chatRules } from './chat';
import { editRules } from './edit';
import { forkRules } from './fork';
import { grantRules } from './grant';
import { moveRules } from './move';
import { promoteRules } from './promote';
import { retractRules } from './retract';
import { rollbackRules } from './rollback';
import { scheduleRules } from './schedule';
import type { Guarded, InputRules } from './rules';
import { steerRules } from './steer';
import { stopRules } from './stop';

export type { ApprovalDecision } from './approval';
export type { ChatAnswer } from './chat';
export type { EditAnswer, EditRefusal } from './edit';
export type { ForkAnswer, ForkCopy, ForkRefusal, ForkSource } from './fork';
export type { GrantAnswer } from './grant';
export type { MoveAnswer, MoveRefusal } from './move';
export type { PromoteAnswer } from './promote';
export type { RetractAnswer } from './retract';
export type { RollbackAnswer, RollbackRefusal } from './rollback';
export { lastTurnOf } from './rollback';
export { AT_PASSED_MS, cronError, nextFiring, scheduleFieldsOf, scheduleItem, scheduleRules, type FieldRefusal, type Schedule, type ScheduleAnswer, type ScheduleFieldsGiven, type ScheduleRefusal } from './schedule';
export type { DecisionContext, Guarded, InputOf, InputRules, OutcomeOf, Reading, Receipt } from './rules';
export type { SteerAnswer } from './steer';
export type { StopAnswer } from './stop';

/** Every kind's rules, as its module declares them; the compiler refuses a kind without its module. */
const kinds = {
  chat: chatRules,
  steer: steerRules,
  stop: stopRules,
  retract: retractRules,
  promote: promoteRules,
  grant: grantRules,
  approval: approvalRules,
  edit: editRules,
  rollback: rollbackRules,
  move: moveRules,
  fork: forkRules,
  schedule: scheduleRules,
} satisfies { readonly [K in InputKind]: InputRules<K> };

type AnswerOf<R> = R extends InputRules<infer _K, infer Answer, infer _Refusal> ? Answer : never;
type RefusalOf<R> = R extends InputRules<infer _K, infer _Answer, infer Refusal> ? Refusal : never;

/** What the worker's decision gives each kind of input that it asked for (each kind's module says what). */
export type ReceiptAnswers = { [K in InputKind]: AnswerOf<(typeof kinds)[K]> };

/** How the worker refused each kind of input: a chat's or steer's reason, a control's code. */
export type ReceiptRefusals = { [K in InputKind]: RefusalOf<(typeof kinds)[K]> };

/**
 * The input kinds, one module of `inputs/` each: what `decideInputs` decides, what the once
 * keys (`receiptKeys`), the receipts (`receiptOf`), the rules of the kinds' events (`evolve`,
 * `onceKey`: `EVENT_RULES`) and the input guard read, dispatched by the input's kind. A new
 * kind is its contract (`inputs/<kind>.ts` of @rudder/contracts), its module here, and its line
 * in this table.
 */
export const INPUT_KINDS: { readonly [K in InputKind]: InputRules<K, ReceiptAnswers[K], ReceiptRefusals[K]> } = kinds;

/** The rules of one kind, for code generic over kinds. */
export const rulesOf = <K extends InputKind>(kind: K): InputRules<K, ReceiptAnswers[K], ReceiptRefusals[K]> => INPUT_KINDS[kind];

/** What the agent's input guard checks of `input` (its kind's `guarded`), on the state the batch found; null: it is not guarded. */
export function guardedOf(state: ConversationState, input: InputRecord): Guarded | null {
  const rules = rulesOf(input.type) as InputRules<InputKind>;
  return rules.guarded?.(state, input) ?? null;
}
