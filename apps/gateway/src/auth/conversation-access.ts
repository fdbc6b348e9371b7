import { Inject, Injectable } from '@nestjs/common';
import { mayAccess as conversationAccess } from '@rudder/conversation';
import { CompanionClient, type CompanionStatus } from '../companion-client';
import { Authenticator } from './authenticator';
import { GatewayError } from '../errors/gateway-error';

/** Reading: status, messages, turns, events. Writing: chat, steer, stop, retract, promote. */
export type Access = 'read' | 'write';

/**
 * Who may do what to a conversation. In open development mode (no AUTH_TOKENS) nobody is
 * told apart, so every conversation is open to every request, including those that other
 * services started on agent.inputs under their own subject. Otherwise the rule of the log
 * (`mayAccess` of @rudder/conversation) on the companion's view of it: the owner (the subject
 * of the first accepted input) and those granted `write` write, those granted `read` read; a
 * conversation without an owner is new. This check is early and may lag by a moment; every
 * write is decided again by the worker, with the input, under the conversation's lock.
 */
export function mayAccess(status: (Pick<CompanionStatus, 'owner'> & Partial<Pick<CompanionStatus, 'grants'>>) | null, subject: string, access: Access, open = false): boolean {
  if (open || status === null) return true;
  return conversationAccess({ owner: status.owner, grants: Object.fromEntries((status.grants ?? []).map((g) => [g.subject, g.access])) }, subject, access);
}

@Injectable()
export class ConversationAccess {
  constructor(
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Authenticator) private readonly authenticator: Authenticator,
  ) {}

  /**
   * Checks `subject` may have `access` to the conversation: 403 `forbidden` otherwise. In open
   * development mode everyone may, so nothing is asked (no companion call on a write's path).
   *
   * The companion lags `agent.inputs` a little: two subjects writing the very first inputs of
   * a conversation at the same moment may both pass; the owner is whoever the companion
   * folded first.
   */
  async require(key: string, subject: string, access: Access): Promise<void> {
    if (!this.authenticator.open) await this.statusFor(key, subject, access);
  }

  /** The same check, answering the companion's status of the conversation (null when it does not know it). */
  async statusFor(key: string, subject: string, access: Access): Promise<CompanionStatus | null> {
    const status = await this.status(key);
    if (!mayAccess(status, subject, access, this.authenticator.open)) {
      throw new GatewayError('forbidden', `${subject} may not ${access} conversation ${key}`);
    }
    return status;
  }

  /** The companion's status of the conversation, unchecked; null when it does not know it. */
  status(key: string): Promise<CompanionStatus | null> {
    return this.companion.status(key).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') return null;
      throw error;
    });
  }
}
