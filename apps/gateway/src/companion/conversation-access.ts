import { Inject, Injectable } from '@nestjs/common';
import { mayAccess as conversationAccess } from '@rudder/conversation';
import { CompanionClient, type CompanionStatus } from './companion-client';
import { Authenticator } from '../auth/authenticator';
import { GatewayError } from '../errors/gateway-error';

/** Reading: status, messages, turns, events. Writing: chat, steer, stop, retract, promote. */
export type Access = 'read' | 'write';

type Owned = (Pick<CompanionStatus, 'owner'> & Partial<Pick<CompanionStatus, 'grants'>>) | null;

/**
 * Who may do what to a conversation. In open development mode (no AUTH_TOKENS) nobody is
 * told apart, so every conversation is open to every request, including those that other
 * services started on agent.inputs under their own subject. Otherwise the rule of the log
 * (`mayAccess` of @rudder/conversation) on the companion's view of it: the owner (the subject
 * of the first accepted input) and those granted `write` write, those granted `read` read. A
 * conversation nobody owns yet (`null`: the companion does not know it) may be written — the
 * first write makes its writer the owner — and never read.
 */
export function mayAccess(status: Owned, subject: string, access: Access, open = false): boolean {
  if (open) return true;
  const owner = status?.owner ?? null;
  return conversationAccess({ owner, grants: Object.fromEntries((status?.grants ?? []).map((g) => [g.subject, g.access])) }, subject, access);
}

@Injectable()
export class ConversationAccess {
  constructor(
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Authenticator) private readonly authenticator: Authenticator,
  ) {}

  /** Whether nobody is told apart (no AUTH_TOKENS): every conversation is open to every request. */
  get open(): boolean {
    return this.authenticator.open;
  }

  /**
   * Checks `subject` may write the conversation: 403 `forbidden` otherwise. In open
   * development mode everyone may, so nothing is asked (no companion call on a write's path).
   *
   * This check is early and may lag by a moment (two subjects writing the very first inputs
   * of a conversation at the same moment may both pass); every write is decided again by the
   * worker, with the input, under the conversation's lock.
   */
  async mayWrite(key: string, subject: string): Promise<void> {
    if (this.open) return;
    if (!mayAccess(await this.status(key), subject, 'write')) throw forbidden(subject, 'write', key);
  }

  /**
   * The status of a conversation `subject` may read: 404 `not_found` for a key nobody owns
   * (in every mode: there is nothing to read), 403 `forbidden` for one the subject may not read.
   */
  async readable(key: string, subject: string): Promise<CompanionStatus> {
    const status = await this.status(key);
    if (status?.owner == null) throw new GatewayError('not_found', `no conversation ${key}`);
    if (!mayAccess(status, subject, 'read', this.open)) throw forbidden(subject, 'read', key);
    return status;
  }

  /**
   * Opening a stream (or asking for a stream token): refused with 403 only when the
   * conversation has an owner and the subject may not read it. A key nobody owns yet may be
   * streamed — the web chat opens its stream before its first chat — and the stream carries
   * only what its reader may read at each event's position (`ReaderAccess`). Answers the
   * status the stream starts from (null: the companion does not know the key), once the
   * companion has folded the conversation at least up to `floor`.
   */
  async streamable(key: string, subject: string, floor = 0): Promise<CompanionStatus | null> {
    const status = await this.status(key, floor);
    if (status?.owner != null && !mayAccess(status, subject, 'read', this.open)) throw forbidden(subject, 'read', key);
    return status;
  }

  /** The companion's status of the conversation, unchecked; null when it does not know it. */
  status(key: string, floor = 0): Promise<CompanionStatus | null> {
    return this.companion.status(key, floor).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') return null;
      throw error;
    });
  }
}

const forbidden = (subject: string, access: Access, key: string) => new GatewayError('forbidden', `${subject} may not ${access} conversation ${key}`);
