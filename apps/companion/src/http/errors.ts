import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { ErrorStatus, type ErrorBody, type ErrorCode } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';

/** The part of Express's response the filter uses (no @types/express in this repository). */
type Response = { status(code: number): { json(body: unknown): unknown } };

/** A named error with a stable code; `ErrorFilter` maps it to its HTTP status, once. */
export class CompanionError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CompanionError';
  }
}

/** A failure of the companion itself; not one of the contract's codes, since the gateway never forwards it as is. */
type InternalErrorBody = { error: { code: 'internal'; message: string } };

/** Every error answer is `{error: {code, message}}`, Nest's own (an unknown route, say) included. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  constructor(private readonly log: Log) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    if (exception instanceof CompanionError) {
      this.send(response, ErrorStatus[exception.code], { error: { code: exception.code, message: exception.message } });
      return;
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = codeOf(status);
      if (code) {
        this.send(response, status, { error: { code, message: exception.message } });
        return;
      }
    }
    this.log.error('a request failed', { error: exception instanceof Error ? (exception.stack ?? exception.message) : String(exception) });
    this.send(response, 500, { error: { code: 'internal', message: 'the companion failed to answer' } });
  }

  private send(response: Response, status: number, body: ErrorBody | InternalErrorBody): void {
    response.status(status).json(body);
  }
}

const codeOf = (status: number): ErrorCode | undefined =>
  (Object.keys(ErrorStatus) as ErrorCode[]).find((code) => ErrorStatus[code] === status);
