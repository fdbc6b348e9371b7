import { GatewayError } from '../errors/gateway-error';

/** The subject of every request while `AUTH_TOKENS` is unset (open development mode). */
export const ANONYMOUS = 'anonymous';

/**
 * Bearer tokens → subjects, from `AUTH_TOKENS="tokenA=alice,tokenB=bob"`.
 * Unset or blank means open development mode: every request is `anonymous`, tokens ignored.
 * A malformed list is a configuration error at start-up, never a silently open server.
 */
export class Authenticator {
  private constructor(private readonly subjects: ReadonlyMap<string, string> | null) {}

  static fromConfig(authTokens: string | undefined): Authenticator {
    if (authTokens === undefined || authTokens.trim() === '') return new Authenticator(null);
    const subjects = new Map<string, string>();
    for (const pair of authTokens.split(',')) {
      const at = pair.indexOf('=');
      const token = pair.slice(0, at).trim();
      const subject = pair.slice(at + 1).trim();
      if (at < 0 || token === '' || subject === '') {
        throw new Error(`bad configuration: AUTH_TOKENS holds "${pair.trim()}", expected token=subject`);
      }
      subjects.set(token, subject);
    }
    return new Authenticator(subjects);
  }

  get open(): boolean {
    return this.subjects === null;
  }

  /** The subject an `Authorization` header proves; 401 when tokens are configured and it proves none. */
  subjectOf(authorization: string | undefined): string {
    if (this.subjects === null) return ANONYMOUS;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match) throw new GatewayError('unauthorized', 'send Authorization: Bearer <token>');
    const subject = this.subjects.get(match[1]);
    if (subject === undefined) throw new GatewayError('unauthorized', 'unknown token');
    return subject;
  }
}
