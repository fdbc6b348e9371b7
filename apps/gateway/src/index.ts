import 'reflect-metadata';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createLog, hop, nestLogger, startTracing, type Config } from '@rudder/runtime';
import { GatewayModule } from './gateway.module';
import { traceRequests } from './http/trace-requests';
import { answerClientErrorsAsJson, checkParsedBody, checkRequestHead, verifyJsonDepth } from './hostile-input/request-checks';
import { answerPosition, Positions, readMinPosition } from './consistency/positions';
import type { GatewayOptions } from './tokens';
import { GatewayMetrics } from './http/gateway-metrics';

export type RunningGateway = {
  /** The port it listens on: the configured one, or the one the system chose for port 0. */
  port: number;
  url: string;
  /** Ends open event streams, stops accepting requests, disconnects from Kafka and PostgreSQL. */
  stop(): Promise<void>;
};

/**
 * The largest JSON body accepted: room for the most messages a chat may hold, each at the
 * text limit, in the worst UTF-8 encoding, plus the envelope. A larger body is refused (413)
 * before it is parsed; a body within it still has each text checked against MAX_TEXT_CHARS.
 */
const bodyLimit = (config: Config): number => Math.max(100_000, 32 * config.MAX_TEXT_CHARS * 4 + 64 * 1024);

/**
 * Starts the gateway on `config.GATEWAY_PORT`. Resolves once it accepts requests, its Kafka
 * producer is connected and its live-events consumer is positioned; rejects (having released
 * what it opened) when it cannot get there. `options`: settings beyond the environment
 * (`GatewayOptions`, e.g. a shorter steer decision wait for tests).
 */
export async function startGateway(config: Config, options: GatewayOptions = {}): Promise<RunningGateway> {
  const log = options.log ?? createLog('gateway');
  startTracing('gateway');
  const authConfigured = (config.AUTH_TOKENS ?? '').trim() !== '' || config.AUTH_JWT_SECRET !== undefined || config.AUTH_JWKS_URL !== undefined;
  if (!authConfigured) {
    log.warn(
      '!!! AUTH_TOKENS, AUTH_JWT_SECRET and AUTH_JWKS_URL are unset: OPEN DEVELOPMENT MODE, every request is the subject "anonymous", no token is checked and the limits per subject are off unless set. Never run it like this in production. !!!',
    );
  }
  const app = await NestFactory.create<NestExpressApplication>(GatewayModule.forConfig(config, log, options), {
    bodyParser: false,
    abortOnError: false,
    logger: nestLogger(log),
  });
  app.disable('x-powered-by');
  // Each write's arrival and answer, when hop marks are on (bench/turn-timeline.mjs).
  if (process.env.RUDDER_HOP_MARKS_DIR) app.use(markWrites);
  app.use(app.get(GatewayMetrics).timeRequests);
  // Hostile input is refused before any route sees it (hostile-input/request-checks.ts):
  // the URL and headers, a body that is not JSON, nesting past 32 levels, polluting keys.
  app.use(checkRequestHead);
  app.useBodyParser('json', { limit: bodyLimit(config), verify: verifyJsonDepth });
  app.use(checkParsedBody);
  app.use(readMinPosition);
  app.use(answerPosition(app.get(Positions)));
  // Last, after the body is read (its stream's callbacks would not run in the span's context).
  app.use(traceRequests);
  answerClientErrorsAsJson(app.getHttpServer());
  try {
    await app.listen(config.GATEWAY_PORT);
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  let stopping: Promise<void> | undefined;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    stop: () => (stopping ??= app.close()),
  };
}

export { GatewayError } from './errors/gateway-error';
export type { GatewayOptions } from './tokens';

function markWrites(request: IncomingMessage, response: ServerResponse, next: () => void): void {
  if (request.method === 'POST') {
    hop('gateway.request');
    response.once('finish', () => hop('gateway.answered'));
  }
  next();
}
