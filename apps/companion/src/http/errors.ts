import { Catch, HttpException, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { ErrorStatus, type ErrorBody, type ErrorCode } from '@rudder/contracts';
import type { Log } from '@rudder/runtime';
import { isDatabaseUnavailable, type DatabaseOutage } from './database-outage';

/** The part of Express's response the filter uses (no @types/express in this repository). */
type Response = { status(code: number): { json(body: unknown): unknown } };

/** A named error with a stable code; `CompanionErrorFilter` maps it to its HTTP status, once. */
export class CompanionError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Structured help; for 503, what is down (`{database: 'unavailable'}`). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'CompanionError';
  }
}

/** A failure of the companion itself; not one of the contract's codes, since the gateway never forwards it as is. */
type InternalErrorBody = { error: { code: 'internal'; message: string } };

/** The answer while the database is away: 503, saying what is down; the gateway passes it on. */
export const databaseUnavailable = () =>
  new CompanionError('unavailable', 'the database (PostgreSQL) is not answering; try again shortly', { database: 'unavailable' });

/**
 * Every error answer is `{error: {code, message, details?}}`, Nest's own (an unknown route,
 * say) included. A query that failed because the database is unreachable is 503
 * `unavailable` naming the database, logged once per outage (`DatabaseOutage`), not a 500
 * with a stack per request.
 */
@Catch()
export class CompanionErrorFilter implements ExceptionFilter {
  constructor(
    private readonly log: Log,
    private readonly outage?: DatabaseOutage,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    if (isDatabaseUnavailable(exception)) {
      this.outage?.failed(exception);
      if (!this.outage) this.log.warn('the database is unavailable', { error: String(exception) });
      exception = databaseUnavailable();
    }
    if (exception instanceof CompanionError) {
      const { code, message, details } = exception;
      this.send(response, ErrorStatus[code], { error: { code, message, ...(details === undefined ? {} : { details }) } });
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
