import { Inject, Injectable } from '@nestjs/common';
import { CompanionClient, type CompanionStatus } from '../companion-client';
import { Authenticator } from './authenticator';
import { GatewayError } from '../errors/gateway-error';

/** Reading: status, messages, turns, events. Writing: chat, steer, stop, retract, promote. */
export type Access = 'read' | 'write';

/**
 * Who may do what to a conversation. In open development mode (no AUTH_TOKENS) nobody is
 * told apart, so every conversation is open to every request, including those that other
 * services started on agent.inputs under their own subject. Otherwise, today: its owner (the subject of its first input) may
 * read and write; a conversation without an owner is new and open to anyone, and the first
 * input makes its subject the owner. Grants (`read`/`write` given by the owner) will be a
 * second source of access here: the decision takes the companion's whole status for that reason.
 */
export function mayAccess(status: Pick<CompanionStatus, 'owner'> | null, subject: string, _access: Access, open = false): boolean {
  const owner = status?.owner ?? null;
  return open || owner === null || owner === subject;
}

@Injectable()
export class ConversationAccess {
  constructor(
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Authenticator) private readonly authenticator: Authenticator,
  ) {}

  /**
   * Checks `subject` may have `access` to the conversation and returns the companion's
   * status of it (null when the companion does not know the conversation), so a caller
   * needing the status does not ask twice. 403 `forbidden` otherwise.
   *
   * The companion lags `agent.inputs` a little: two subjects writing the very first inputs of
   * a conversation at the same moment may both pass; the owner is whoever the companion
   * folded first.
   */
  async require(key: string, subject: string, access: Access): Promise<CompanionStatus | null> {
    const status = await this.companion.status(key).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') return null;
      throw error;
    });
    if (!mayAccess(status, subject, access, this.authenticator.open)) {
      throw new GatewayError('forbidden', `${subject} may not ${access} conversation ${key}`);
    }
    return status;
  }
}
