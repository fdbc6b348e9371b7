import type { ServerResponse } from 'node:http';
import { Catch, HttpException, Inject, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { ErrorStatus, type ErrorBody, type ErrorCode } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import { ZodError } from 'zod';
import { LOG } from '../tokens';
import { GatewayError, badInput, type GatewayErrorCode } from './gateway-error';

/**
 * Answer of an error nobody meant: a bug. `ErrorCode` has no code for it (yet), so it is the
 * one status not taken from `ErrorStatus`; its message never carries internals.
 */
const INTERNAL = { status: 500, code: 'internal' } as const;
type AnyErrorBody = ErrorBody | { error: { code: GatewayErrorCode | typeof INTERNAL.code; message: string; details?: unknown } };

/** HTTP status → our code, for errors raised by Nest or Express (unknown route, bad JSON). */
const codeOfStatus = new Map<number, ErrorCode>(
  (Object.entries(ErrorStatus) as [ErrorCode, number][]).map(([code, status]) => [status, code]),
);

/**
 * The errors of a door that speaks another protocol, in that protocol's shape: for the paths it
 * `covers` (the request's URL), the answer's body and headers for the status the error has (its
 * code's, or 500 for `null`: a bug). The Responses door has one (responses/protocol-errors.ts).
 */
export type ErrorShape = {
  covers(path: string | undefined): boolean;
  answer(status: number, error: GatewayError | null): { body: unknown; headers: Readonly<Record<string, string>> };
};

/** The doors' own error shapes (`ErrorShape[]`), as the module gathers them from its parts. */
export const ERROR_SHAPES = Symbol('ErrorShapes');

/**
 * The gateway's only exception filter: every failure, ours or the framework's, leaves as
 * `{error: {code, message, details?}}` with the status `ErrorStatus` gives its code.
 * That includes what happens before a controller runs: malformed JSON and oversized bodies
 * (the body parser), unknown routes (Nest's not-found handler), a bad percent-encoding. Under
 * the paths a door's `ErrorShape` covers (`/v1/responses`: the OpenAI protocol's
 * `{error: {message, type, param, code}}`) the same errors leave in that shape, with the same status.
 */
@Catch()
export class GatewayErrorFilter implements ExceptionFilter {
  constructor(
    @Inject(LOG) private readonly log: Log,
    @Inject(ERROR_SHAPES) private readonly shapes: readonly ErrorShape[],
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<ServerResponse>();
    // Express's request: its route's `key` is the conversation a failure concerns.
    const request = host.switchToHttp().getRequest<{ method?: string; originalUrl?: string; params?: { key?: string } }>();
    const shape = this.shapes.find((candidate) => candidate.covers(request.originalUrl));
    const { status, body, headers } = this.answer(exception, { method: request.method, path: request.originalUrl, conversation: request.params?.key }, shape);
    if (response.headersSent) {
      // A stream (SSE) already answered 200; the only honest thing left is to end it.
      response.end();
      return;
    }
    response.statusCode = status;
    response.setHeader('content-type', 'application/json; charset=utf-8');
    if (status === ErrorStatus.unauthorized) response.setHeader('www-authenticate', 'Bearer');
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.end(JSON.stringify(body));
  }

  private answer(
    exception: unknown,
    about: Record<string, string | undefined>,
    shape: ErrorShape | undefined,
  ): { status: number; body: unknown; headers: Readonly<Record<string, string>> } {
    const known = this.toGatewayError(exception);
    // A door's own shape (the Responses door's: the OpenAI protocol's).
    if (shape) {
      const status = known?.status ?? INTERNAL.status;
      if (!known) this.unexpected(exception, about);
      return { status, ...shape.answer(status, known) };
    }
    if (known) {
      const error = { code: known.code, message: known.message, ...(known.details === undefined ? {} : { details: known.details }) };
      const body: AnyErrorBody = { error };
      return { status: known.status, body, headers: known.headers };
    }
    this.unexpected(exception, about);
    const body: AnyErrorBody = { error: { code: INTERNAL.code, message: 'internal error' } };
    return { status: INTERNAL.status, body, headers: {} };
  }

  private unexpected(exception: unknown, about: Record<string, string | undefined>): void {
    this.log.error('unexpected error', {
      ...about,
      error: exception instanceof Error ? (exception.stack ?? exception.message) : String(exception),
    });
  }

  private toGatewayError(exception: unknown): GatewayError | null {
    if (exception instanceof GatewayError) return exception;
    if (exception instanceof ZodError) return badInput('request', exception);
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      // The parser is strict: `null` or `42`, valid JSON but no object, fails here too (with a
      // message about a token), and every body the API takes is an object.
      if (status === 400 && /JSON/i.test(exception.message)) {
        return new GatewayError('bad_request', `the body is not a JSON object: ${exception.message}`);
      }
      if (status === 404) return new GatewayError('not_found', `no such route: ${exception.message.replace(/^Cannot /, '')}`);
      return fromStatus(status, exception.message);
    }
    // Errors of the Express body parser (http-errors): a status and a `type` such as
    // 'entity.too.large'; they reach us unmapped when they are not SyntaxErrors.
    if (isHttpError(exception)) {
      if (exception.type === 'entity.too.large') {
        const limit = exception.limit === undefined ? '' : ` (${exception.limit} bytes)`;
        return new GatewayError('text_too_long', `the body is larger than the gateway accepts${limit}`);
      }
      return fromStatus(exception.status, exception.message);
    }
    return null;
  }
}

function fromStatus(status: number, message: string): GatewayError | null {
  const code = codeOfStatus.get(status) ?? (status >= 400 && status < 500 ? 'bad_request' : undefined);
  return code ? new GatewayError(code, message) : null;
}

type HttpError = Error & { status: number; type?: string; limit?: number; expose?: boolean };
function isHttpError(value: unknown): value is HttpError {
  return value instanceof Error && typeof (value as Partial<HttpError>).status === 'number';
}
