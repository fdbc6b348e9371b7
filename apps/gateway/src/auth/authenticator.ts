import { GatewayError } from '../errors/gateway-error';
import { StreamTokens, type StreamTokenSettings } from './stream-tokens';
import { JwtVerifier, type JwtSettings } from './jwt-verifier';

/** The subject of every request while no authentication is configured (open development mode). */
export const ANONYMOUS = 'anonymous';

/**
 * Who a request is. `stream` is null for a full token (AUTH_TOKENS, a JWT); for a stream
 * token it is the one conversation whose event stream the token may open, and nothing else.
 */
export type Principal = { subject: string; stream: string | null };

export type AuthSettings = JwtSettings & StreamTokenSettings & { AUTH_TOKENS?: string };

/**
 * Bearer tokens → subjects. Three kinds, tried in this order:
 * 1. stream tokens (the gateway's own, `typ` rudder-stream+jwt): verified as one and only as one;
 * 2. the static map `AUTH_TOKENS="tokenA=alice,tokenB=bob"`;
 * 3. JWTs of an identity provider (`JwtVerifier`), when AUTH_JWT_SECRET or AUTH_JWKS_URL is set.
 * A subject is a name: `alice` of AUTH_TOKENS and a JWT whose subject claim is `alice` are
 * the same subject. With neither AUTH_TOKENS nor a JWT setting the gateway runs in open
 * development mode: every request is `anonymous`, tokens ignored. A malformed setting is a
 * configuration error at start-up, never a silently open server.
 */
export class Authenticator {
  private constructor(
    private readonly subjects: ReadonlyMap<string, string> | null,
    private readonly jwt: JwtVerifier | null,
    readonly streamTokens: StreamTokens,
  ) {}

  /** `now`: the clock stream tokens are issued and checked by (`GatewayOptions.now`). */
  static fromConfig(settings: AuthSettings, now: () => number = Date.now): Authenticator {
    return new Authenticator(parseTokens(settings.AUTH_TOKENS), JwtVerifier.fromConfig(settings), StreamTokens.fromConfig(settings, now));
  }

  get open(): boolean {
    return this.subjects === null && this.jwt === null;
  }

  /**
   * Who the request is, from its `Authorization` header or (where the route allows it, the
   * event stream) its `access_token` query parameter, which takes stream tokens only; 401 when authentication is configured
   * and neither proves anyone, 400 when both are given.
   */
  async authenticate(authorization: string | undefined, accessToken?: string): Promise<Principal> {
    if (this.open) return { subject: ANONYMOUS, stream: null };
    if (authorization !== undefined && accessToken !== undefined) {
      throw new GatewayError('bad_request', 'send the token once: in the Authorization header or as access_token, not both');
    }
    const token = accessToken ?? bearerOf(authorization);
    // A URL ends up in logs and browser history: only a short-lived stream token may travel there.
    if (accessToken !== undefined && !StreamTokens.isStreamToken(token)) {
      throw new GatewayError('unauthorized', 'access_token takes a stream token only (POST /v1/conversations/{key}/stream-tokens); send other tokens as Authorization: Bearer');
    }
    if (StreamTokens.isStreamToken(token)) {
      const grant = await this.streamTokens.verify(token);
      return { subject: grant.subject, stream: grant.conversation };
    }
    const mapped = this.subjects?.get(token);
    if (mapped !== undefined) return { subject: mapped, stream: null };
    if (this.jwt !== null && token.split('.').length === 3) return { subject: await this.jwt.subjectOf(token), stream: null };
    throw new GatewayError('unauthorized', 'unknown token');
  }
}

function bearerOf(authorization: string | undefined): string {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) throw new GatewayError('unauthorized', 'send Authorization: Bearer <token>');
  return match[1];
}

function parseTokens(authTokens: string | undefined): Map<string, string> | null {
  if (authTokens === undefined || authTokens.trim() === '') return null;
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
  return subjects;
}
