import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { GatewayError } from '../errors/gateway-error';

/** The JWT settings of the environment (libs/runtime/src/config.ts). */
export type JwtSettings = {
  AUTH_JWT_SECRET?: string;
  AUTH_JWKS_URL?: string;
  AUTH_JWT_ISSUER?: string;
  AUTH_JWT_AUDIENCE?: string;
  AUTH_JWT_SUBJECT_CLAIM: string;
};

/** Shortest HS256 secret accepted: 256 bits, the size of the hash (RFC 7518 §3.2). */
export const MIN_SECRET_CHARS = 32;
/** Clock skew allowed between the identity provider and the gateway, for `exp` and `nbf`. */
const CLOCK_TOLERANCE_SECONDS = 5;
/** The longest subject a token may name; longer is a bad token, not a truncated subject. */
const MAX_SUBJECT_CHARS = 200;

/**
 * Verifies the bearer JWTs of an identity provider: HS256 with a shared secret
 * (`AUTH_JWT_SECRET`), RS256/ES256 with the keys of a JWKS (`AUTH_JWKS_URL`, fetched by jose
 * when a token names a key it has not cached). Each key is used only with its own algorithms,
 * so a token signed HS256 with the JWKS' public key as secret does not verify.
 *
 * Every token must carry `iss` = AUTH_JWT_ISSUER, `aud` containing AUTH_JWT_AUDIENCE and an
 * `exp` in the future (5 s of clock skew allowed); the subject is the string claim
 * AUTH_JWT_SUBJECT_CLAIM (default `sub`). Anything else is 401 `unauthorized` saying what
 * was wrong; a JWKS that cannot be fetched is 503 `unavailable` (the identity provider is
 * down, the token may well be good).
 */
export class JwtVerifier {
  private constructor(
    private readonly secret: Uint8Array | null,
    private readonly jwks: JWTVerifyGetKey | null,
    private readonly jwksUrl: string | undefined,
    private readonly issuer: string,
    private readonly audience: string,
    private readonly subjectClaim: string,
  ) {}

  /** Null when no JWT is configured; a configuration error at start-up when it is half configured. */
  static fromConfig(settings: JwtSettings): JwtVerifier | null {
    const { AUTH_JWT_SECRET: secret, AUTH_JWKS_URL: jwksUrl, AUTH_JWT_ISSUER: issuer, AUTH_JWT_AUDIENCE: audience } = settings;
    if (secret === undefined && jwksUrl === undefined) {
      if (issuer !== undefined || audience !== undefined) {
        throw new Error('bad configuration: AUTH_JWT_ISSUER/AUTH_JWT_AUDIENCE are set, but neither AUTH_JWT_SECRET nor AUTH_JWKS_URL');
      }
      return null;
    }
    if (secret !== undefined && secret.length < MIN_SECRET_CHARS) {
      throw new Error(`bad configuration: AUTH_JWT_SECRET must have at least ${MIN_SECRET_CHARS} characters`);
    }
    if (!issuer || !audience) {
      throw new Error('bad configuration: JWT authentication needs AUTH_JWT_ISSUER and AUTH_JWT_AUDIENCE (every token is checked against both)');
    }
    return new JwtVerifier(
      secret === undefined ? null : new TextEncoder().encode(secret),
      jwksUrl === undefined ? null : createRemoteJWKSet(new URL(jwksUrl)),
      jwksUrl,
      issuer,
      audience,
      settings.AUTH_JWT_SUBJECT_CLAIM,
    );
  }

  /** The subject the token proves; throws 401 (or 503 when the JWKS is away). */
  async subjectOf(token: string): Promise<string> {
    const payload = await this.verify(token);
    const subject = payload[this.subjectClaim];
    if (typeof subject !== 'string' || subject.trim() === '' || subject.length > MAX_SUBJECT_CHARS || /[\p{Cc}]/u.test(subject)) {
      throw new GatewayError('unauthorized', `the token has no usable "${this.subjectClaim}" claim (a string of 1 to ${MAX_SUBJECT_CHARS} characters naming the subject)`);
    }
    return subject;
  }

  private async verify(token: string): Promise<JWTPayload> {
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new GatewayError('unauthorized', 'the token is not a well-formed JWT');
    }
    const options = { issuer: this.issuer, audience: this.audience, requiredClaims: ['exp'], clockTolerance: CLOCK_TOLERANCE_SECONDS };
    try {
      if (alg === 'HS256' && this.secret !== null) {
        return (await jwtVerify(token, this.secret, { ...options, algorithms: ['HS256'] })).payload;
      }
      if ((alg === 'RS256' || alg === 'ES256') && this.jwks !== null) {
        return (await jwtVerify(token, this.jwks, { ...options, algorithms: ['RS256', 'ES256'] })).payload;
      }
    } catch (error) {
      throw this.refusal(error);
    }
    throw new GatewayError('unauthorized', `the token is signed with ${alg ?? 'no algorithm'}; this gateway accepts ${this.accepted().join(', ')}`);
  }

  private accepted(): string[] {
    return [...(this.secret === null ? [] : ['HS256']), ...(this.jwks === null ? [] : ['RS256', 'ES256'])];
  }

  private refusal(error: unknown): GatewayError {
    if (error instanceof errors.JWTExpired) return new GatewayError('unauthorized', 'the token has expired');
    if (error instanceof errors.JWTClaimValidationFailed) {
      return new GatewayError('unauthorized', `the token's "${error.claim}" claim is not accepted: ${error.reason === 'missing' ? 'missing' : error.message}`);
    }
    if (error instanceof errors.JWSSignatureVerificationFailed) return new GatewayError('unauthorized', "the token's signature does not verify");
    if (error instanceof errors.JWKSNoMatchingKey) return new GatewayError('unauthorized', 'no key of the JWKS matches the token');
    if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid || !(error instanceof errors.JOSEError)) {
      return new GatewayError('unavailable', `the identity provider's keys (${this.jwksUrl ?? 'JWKS'}) cannot be fetched; try again shortly`, {
        jwks: 'unavailable',
      });
    }
    return new GatewayError('unauthorized', `bad token: ${error.message}`);
  }
}
