import type { ErrorCode } from '@rudder/contracts';

/** Every code the API answers with: the contract's, plus the gateway's edge codes. */
export type RudderErrorCode = ErrorCode | 'rate_limited' | 'internal';

/**
 * An error answer of the API: `code` is the stable code (branch on it), `status` the HTTP
 * status, `details` the structured help it sent (`counts` of a full queue, the zod paths of a
 * bad body…), `retryAfterSeconds` its `Retry-After` (429, some 503s).
 */
export class RudderError extends Error {
  override readonly name = 'RudderError';

  constructor(
    readonly code: RudderErrorCode,
    readonly status: number,
    message: string,
    readonly details?: unknown,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  /** Worth sending again as it was (same id): the service was unavailable or asked to slow down. */
  get retryable(): boolean {
    return this.status === 503 || this.status === 429;
  }
}

/** The RudderError of a non-2xx answer (its body read); an answer that is not the API's error shape still gets one. */
export async function errorOf(response: Response): Promise<RudderError> {
  const text = await response.text().catch(() => '');
  const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  const code = typeof error?.code === 'string' ? (error.code as RudderErrorCode) : fallbackCode(response.status);
  const message = typeof error?.message === 'string' ? error.message : `HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`;
  return new RudderError(code, response.status, message, error?.details, Number.isFinite(retryAfter) ? retryAfter : undefined);
}

const fallbackCode = (status: number): RudderErrorCode =>
  status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : status === 404 ? 'not_found' : status === 429 ? 'rate_limited' : status >= 500 ? (status === 503 ? 'unavailable' : 'internal') : 'bad_request';
