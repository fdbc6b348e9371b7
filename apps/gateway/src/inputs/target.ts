import type { InputState, MessageKind } from '@rudder/contracts';
import type { CompanionClient, CompanionInput } from '../companion/companion-client';
import { GatewayError } from '../errors/gateway-error';

/**
 * What the kinds that name another input of the conversation share (a retraction, a
 * promotion, …): their target must still be pending; each is refused by the worker for the
 * same reasons, and answered alike. Each kind says how its answers speak of it (`TargetWords`).
 */
export type TargetWords = {
  /** The kind, as a verb: `retract`. */
  verb: string;
  /** The request: `retraction`. */
  request: string;
  /** What a subject does with it: `retracts`. */
  does: string;
  /** What became of a target it took: `retracted`. */
  done: string;
};

/** The worker's refusals every such kind shares: a subject that may not write, a target not pending (or unknown). */
export type TargetRefusal = 'forbidden' | 'not_found' | 'delivered';

const NO_LONGER_PENDING: Record<InputState, string> = {
  delivered: 'was already delivered: its turn started, or a running turn took it',
  retracted: 'was already retracted',
  discarded: 'was discarded by a stop',
  rejected: 'was refused when it was sent, so it never waited',
  collapsed: 'was collapsed into another follow-up by the queue policy (`inputs.collapsed`): that one’s turn answers it',
  pending: 'is no longer pending: it was delivered, retracted or discarded meanwhile',
};

/**
 * 409 `conflict` for a retraction or a promotion of an input that no longer waits, saying
 * what became of it (`state`: as the companion tells, or as the worker's refusal said).
 */
export function notPending(words: TargetWords, id: string, state: InputState): GatewayError {
  return new GatewayError('conflict', `input ${id} cannot be ${words.done}: it ${NO_LONGER_PENDING[state]}`, { id, state });
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
  words: TargetWords,
  key: string,
  target: string | { latest: MessageKind },
  code: TargetRefusal,
  otherwise?: (known: CompanionInput) => GatewayError | undefined,
): Promise<GatewayError> {
  if (code === 'forbidden') return new GatewayError('forbidden', `the worker refused the ${words.request}: only who may write to ${key} ${words.does} its inputs`);
  if (typeof target !== 'string') {
    return new GatewayError('not_found', `conversation ${key} has no pending ${target.latest} to ${words.verb}`, { latest: target.latest });
  }
  const known = await companion.input(key, target);
  const other = known === null ? undefined : otherwise?.(known);
  if (other !== undefined) return other;
  if (known !== null) return notPending(words, target, known.state);
  if (code === 'delivered') return notPending(words, target, 'delivered');
  return new GatewayError('not_found', `conversation ${key} has no input ${target}`, { id: target });
}
