import type { ProtocolErrorAnswer } from '@rudder/contracts';
import type { ErrorShape } from '../errors/error-filter';
import { GatewayError, type GatewayErrorCode } from '../errors/gateway-error';

/** The Responses door's routes: their errors are in the protocol's shape (`PROTOCOL_ERRORS`). */
export const RESPONSES_PATH = '/v1/responses';

export const isResponsesPath = (path: string | undefined): boolean =>
  path !== undefined && (path === RESPONSES_PATH || path.startsWith(`${RESPONSES_PATH}/`) || path.startsWith(`${RESPONSES_PATH}?`));

/**
 * An error of the door with the protocol's own code (`previous_response_not_found`,
 * `previous_response_in_progress`, …) and the body field it concerns; its status is its
 * gateway code's, as every error's.
 */
export class ProtocolError extends GatewayError {
  constructor(
    code: GatewayErrorCode,
    readonly protocolCode: string,
    message: string,
    readonly param: string | null = null,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message, undefined, headers);
  }
}

/**
 * The header that tells the `openai` client not to retry (it retries 408, 409, 429 and 5xx
 * and connection errors by itself, with the same body and no idempotency key of its own).
 */
export const NO_RETRY = { 'x-should-retry': 'false' } as const;

/**
 * The same error, answered with `x-should-retry: false`: every error of a create whose input was
 * produced (its retry would be another input: the client retries by itself, without an id).
 */
export function notToBeRetried(error: unknown): unknown {
  if (!(error instanceof GatewayError) || error.headers['x-should-retry'] === 'false') return error;
  const headers = { ...error.headers, ...NO_RETRY };
  if (error instanceof ProtocolError) return new ProtocolError(error.code, error.protocolCode, error.message, error.param, headers);
  return new GatewayError(error.code, error.message, error.details, headers);
}

/** The worker's refusals of a create, in the protocol's words where it has its own. */
export function protocolRefusal(error: unknown): unknown {
  if (!(error instanceof GatewayError)) return error;
  // The door never sends onBusy reject: a busy refusal is `ifSteerable`'s.
  if (error.code === 'conflict') {
    return new ProtocolError(
      'conflict',
      'conversation_locked',
      'the response is still running and its agent takes no steers, so it is not wound down for a follow-up: send it once the response has ended',
      'previous_response_id',
    );
  }
  if (error.code === 'unknown_agent') return new ProtocolError('unknown_agent', 'model_not_found', error.message, 'model');
  return error;
}

/**
 * An error as the protocol answers it: `{error: {message, type, param, code}}`. `code` is the
 * door's own (`ProtocolError`) or the gateway's stable code (`not_found`, `queue_full`, …);
 * `param` the body field a validation failed on. A 409 is never to be retried.
 */
export function protocolAnswer(
  status: number,
  error: GatewayError | null,
): { body: ProtocolErrorAnswer; headers: Record<string, string> } {
  const code = error instanceof ProtocolError ? error.protocolCode : (error?.code ?? 'internal');
  const type = status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const headers: Record<string, string> = { ...(error?.headers ?? {}), ...(status === 409 ? NO_RETRY : {}) };
  return {
    body: { error: { message: error?.message ?? 'internal error', type, param: paramOf(error), code } },
    headers,
  };
}

function paramOf(error: GatewayError | null): string | null {
  if (error instanceof ProtocolError) return error.param;
  // A zod failure at the edge (`badInput`): its first issue's path.
  const issues = error?.details;
  if (Array.isArray(issues) && typeof issues[0]?.path === 'string' && issues[0].path !== '') return issues[0].path as string;
  return null;
}

/** The door's errors in the protocol's shape, on its paths: the gateway's one exception filter answers with it. */
export const PROTOCOL_ERRORS: ErrorShape = { covers: isResponsesPath, answer: protocolAnswer };
