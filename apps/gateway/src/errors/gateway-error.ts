import { ErrorStatus, type ErrorCode } from '@rudder/contracts';
import type { ZodError } from 'zod';

/**
 * The one error the gateway's code throws on purpose. `code` is stable (clients branch on
 * it); `message` is for people; `details` is optional structured help (the zod paths that
 * failed, say); `headers` go on the answer (`Retry-After` of a 429, say). The HTTP status
 * comes from `ErrorStatus` (or `EdgeErrorStatus`), nowhere else.
 */
/**
 * Codes the gateway's edge answers that the contract's `ErrorStatus` does not hold (yet):
 * `rate_limited` is a subject over its own limits (inputs per second, open streams), told
 * apart from `queue_full`, a conversation whose queue is full. To move into libs/contracts.
 */
export const EdgeErrorStatus = { rate_limited: 429 } as const;
export type GatewayErrorCode = ErrorCode | keyof typeof EdgeErrorStatus;

export class GatewayError extends Error {
  override readonly name = 'GatewayError';

  constructor(
    readonly code: GatewayErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  get status(): number {
    return this.code === 'rate_limited' ? EdgeErrorStatus[this.code] : ErrorStatus[this.code];
  }
}

/** At most this many of a zod failure's issues are told, each cut to ISSUE_CHARS: a body of 300,000 bad items (or one huge key) is not echoed back. */
const MAX_ISSUES = 20;
const ISSUE_CHARS = 300;
const cut = (text: string) => (text.length > ISSUE_CHARS ? `${text.slice(0, ISSUE_CHARS)}…` : text);

/** A zod failure at the edge: 400 with the failing paths (the first MAX_ISSUES), so a client can fix them at once. */
export function badInput(what: string, error: ZodError): GatewayError {
  const issues = error.issues.slice(0, MAX_ISSUES).map((issue) => ({ path: cut(issue.path.map(String).join('.')), message: cut(issue.message) }));
  const more = error.issues.length - issues.length;
  const summary = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ') + (more > 0 ? `; and ${more} more` : '');
  return new GatewayError('bad_request', `bad ${what}: ${summary}`, issues);
}
