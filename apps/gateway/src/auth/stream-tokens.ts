import { randomBytes } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { GatewayError } from '../errors/gateway-error';

/** The JOSE `typ` of a stream token: what tells it from any other bearer token. */
export const STREAM_TOKEN_TYPE = 'rudder-stream+jwt';
const ISSUER = 'rudder-gateway';
const AUDIENCE = 'rudder-events';
const MIN_SECRET_CHARS = 32;

/** What a stream token proves: this subject may open the event stream of this conversation, and nothing else. */
export type StreamGrant = { subject: string; conversation: string };

export type StreamTokenSettings = { AUTH_STREAM_TOKEN_SECRET?: string; AUTH_STREAM_TOKEN_TTL_SECONDS: number };

/**
 * Short-lived tokens for `GET /v1/conversations/{key}/events` only, so a browser can open an
 * EventSource (`?access_token=`) without holding its main token. A stream token is an HS256
 * JWT of the gateway's own (`typ` rudder-stream+jwt, `iss` rudder-gateway, `aud`
 * rudder-events) naming the subject (`sub`) and the conversation (`conversation`), valid for
 * AUTH_STREAM_TOKEN_TTL_SECONDS. It proves who the subject is, not that it may read: read
 * access is checked again when the stream opens, so a revoked reader's token opens nothing.
 *
 * The secret is AUTH_STREAM_TOKEN_SECRET, or random per process when unset (tokens then open
 * streams on the issuing gateway only). It must differ from AUTH_JWT_SECRET: an identity
 * provider's token must never pass as the gateway's, nor the other way round.
 */
export class StreamTokens {
  private constructor(
    private readonly secret: Uint8Array,
    private readonly ttlSeconds: number,
    private readonly now: () => number,
  ) {}

  static fromConfig(settings: StreamTokenSettings & { AUTH_JWT_SECRET?: string }, now: () => number = Date.now): StreamTokens {
    const configured = settings.AUTH_STREAM_TOKEN_SECRET;
    if (configured !== undefined && configured.length < MIN_SECRET_CHARS) {
      throw new Error(`bad configuration: AUTH_STREAM_TOKEN_SECRET must have at least ${MIN_SECRET_CHARS} characters`);
    }
    if (configured !== undefined && configured === settings.AUTH_JWT_SECRET) {
      throw new Error('bad configuration: AUTH_STREAM_TOKEN_SECRET must differ from AUTH_JWT_SECRET');
    }
    const secret = configured === undefined ? randomBytes(32) : new TextEncoder().encode(configured);
    return new StreamTokens(secret, settings.AUTH_STREAM_TOKEN_TTL_SECONDS, now);
  }

  /** Whether a bearer token claims to be a stream token (it is then verified as one, and only as one). */
  static isStreamToken(token: string): boolean {
    try {
      return decodeProtectedHeader(token).typ === STREAM_TOKEN_TYPE;
    } catch {
      return false;
    }
  }

  async issue(grant: StreamGrant): Promise<{ token: string; expiresAt: string }> {
    const issuedAt = Math.floor(this.now() / 1000);
    const expiresAt = issuedAt + this.ttlSeconds;
    const token = await new SignJWT({ conversation: grant.conversation })
      .setProtectedHeader({ alg: 'HS256', typ: STREAM_TOKEN_TYPE })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setSubject(grant.subject)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.secret);
    return { token, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  /** The grant a stream token carries; 401 when it does not verify or has expired. */
  async verify(token: string): Promise<StreamGrant> {
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        typ: STREAM_TOKEN_TYPE,
        issuer: ISSUER,
        audience: AUDIENCE,
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(this.now()),
      });
      if (typeof payload.sub !== 'string' || typeof payload.conversation !== 'string') throw new errors.JWTInvalid('incomplete');
      return { subject: payload.sub, conversation: payload.conversation };
    } catch (error) {
      if (error instanceof errors.JWTExpired) throw new GatewayError('unauthorized', 'the stream token has expired; ask for a new one');
      throw new GatewayError('unauthorized', 'the stream token does not verify (issued by another gateway, or altered)');
    }
  }
}
