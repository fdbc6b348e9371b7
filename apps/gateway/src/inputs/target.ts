import type { InputState, MessageKind } from '@rudder/contracts';
import type { ReceiptRefusals } from '@rudder/conversation';
import type { CompanionClient, CompanionInput } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';

/**
 * What a retraction and a promotion share: each names another input of the conversation, its
 * target, which must still be pending; each is refused by the worker for the same reasons, and
 * answered alike.
 */
export type TargetKind = 'retract' | 'promote';

const WORDS = {
  retract: { request: 'retraction', does: 'retracts', done: 'retracted' },
  promote: { request: 'promotion', does: 'promotes', done: 'promoted' },
} as const satisfies Record<TargetKind, { request: string; does: string; done: string }>;

const NO_LONGER_PENDING: Record<InputState, string> = {
  delivered: 'was already delivered: its turn started, or a running turn took it',
  retracted: 'was already retracted',
  discarded: 'was discarded by a stop',
  rejected: 'was refused when it was sent, so it never waited',
  pending: 'is no longer pending: it was delivered, retracted or discarded meanwhile',
};

/**
 * 409 `conflict` for a retraction or a promotion of an input that no longer waits, saying
 * what became of it (`state`: as the companion tells, or as the worker's refusal said).
 */
export function notPending(kind: TargetKind, id: string, state: InputState): GatewayError {
  return new GatewayError('conflict', `input ${id} cannot be ${WORDS[kind].done}: it ${NO_LONGER_PENDING[state]}`, { id, state });
}

/**
 * The answer to the worker's refusal of a retraction or a promotion, in this order: 403 for a
 * subject who may not write; 404 when nothing of the kind a `latest` target names is pending;
 * then, for a target the companion knows, what `otherwise` says of it (a promotion of a steer),
 * else 409 saying what became of it; 409 when the worker said `delivered`; 404 when nobody
 * knows the target.
 */
export async function targetRefused(
  companion: CompanionClient,
  kind: TargetKind,
  key: string,
  target: string | { latest: MessageKind },
  code: ReceiptRefusals[TargetKind],
  otherwise?: (known: CompanionInput) => GatewayError | undefined,
): Promise<GatewayError> {
  const words = WORDS[kind];
  if (code === 'forbidden') return new GatewayError('forbidden', `the worker refused the ${words.request}: only who may write to ${key} ${words.does} its inputs`);
  if (typeof target !== 'string') {
    return new GatewayError('not_found', `conversation ${key} has no pending ${target.latest} to ${kind}`, { latest: target.latest });
  }
  const known = await companion.input(key, target);
  const other = known === null ? undefined : otherwise?.(known);
  if (other !== undefined) return other;
  if (known !== null) return notPending(kind, target, known.state);
  if (code === 'delivered') return notPending(kind, target, 'delivered');
  return new GatewayError('not_found', `conversation ${key} has no input ${target}`, { id: target });
}
