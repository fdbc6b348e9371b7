import { ErrorStatus, type ErrorCode } from '@rudder/contracts';
import type { ZodError } from 'zod';

/**
 * The one error the gateway's code throws on purpose. `code` is stable (clients branch on
 * it); `message` is for people; `details` is optional structured help (the zod paths that
 * failed, say); `headers` go on the answer (`Retry-After` of a 429, say). The HTTP status
 * comes from `ErrorStatus`, nowhere else.
 */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  get status(): number {
    return ErrorStatus[this.code];
  }
}

/** A zod failure at the edge: 400 with every failing path, so a client can fix all of them at once. */
export function badInput(what: string, error: ZodError): GatewayError {
  const issues = error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  const summary = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; ');
  return new GatewayError('bad_request', `bad ${what}: ${summary}`, issues);
}
