import { PATH_METADATA, METHOD_METADATA } from '@nestjs/common/constants';
import { RequestMethod, type Type } from '@nestjs/common';
import { createLog, readConfig } from '@rudder/runtime';
import { streamEventTypes } from '@rudder/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { startHarness, type Harness } from '../../../../test/support/gateway/harness';
import { GatewayModule } from '../gateway.module';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ AUTH_TOKENS: 'tok=alice' }, { decisionTimeoutMs: 300 });
});
afterAll(async () => {
  await h?.stop();
});

/** Every route the gateway's controllers declare, as `METHOD /path/{param}` (Nest's own metadata). */
function servedRoutes(): string[] {
  const config = readConfig({ KAFKA_BROKERS: inject('kafkaBrokers'), DATABASE_URL: inject('databaseUrl') });
  const controllers = (GatewayModule.forConfig(config, createLog('openapi-spec')).controllers ?? []) as Type[];
  const routes: string[] = [];
  for (const controller of controllers) {
    const base = String(Reflect.getMetadata(PATH_METADATA, controller) ?? '');
    for (const name of Object.getOwnPropertyNames(controller.prototype)) {
      const handler = controller.prototype[name];
      if (name === 'constructor' || Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      const path = ['', base, String(Reflect.getMetadata(PATH_METADATA, handler) ?? '')]
        .join('/')
        .replace(/\/+/g, '/')
        .replace(/(.)\/$/, '$1')
        .replace(/:([A-Za-z]+)/g, '{$1}');
      routes.push(`${method} ${path}`);
    }
  }
  return routes.sort();
}

type Doc = { openapi: string; paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } };
const documented = (doc: Doc): string[] =>
  Object.entries(doc.paths)
    .flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document of exactly the routes the gateway serves, without a token', async () => {
    const answer = await h.call('/openapi.json');
    expect(answer.status).toBe(200);
    const doc = answer.body as Doc;
    expect(doc.openapi).toBe('3.1.0');
    expect(documented(doc)).toEqual(servedRoutes());
  });

  it('every documented route answers something other than "no such route"', async () => {
    const doc = (await h.call('/openapi.json')).body as Doc;
    const sample: Record<string, string> = { key: 'openapi-probe', id: 'in-1', turn: 't-1', subject: 'bob' };
    for (const route of documented(doc)) {
      const [method, template] = route.split(' ') as [string, string];
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(sample[name]!));
      const query = template.endsWith('/turns') ? '?input=in-1' : template.endsWith('/inputs') ? '?latest=chat' : '';
      const withBody = method === 'POST' || method === 'PUT';
      const response = await fetch(h.gateway.url + path + query, {
        method,
        headers: { authorization: 'Bearer tok', ...(withBody ? { 'content-type': 'application/json' } : {}) },
        body: withBody ? '{}' : undefined,
        signal: AbortSignal.timeout(10_000),
      });
      const text = template.endsWith('/events') ? '' : await response.text();
      await response.body?.cancel().catch(() => undefined);
      expect(text.includes('no such route'), `${route} answered ${response.status} ${text}`).toBe(false);
    }
  });

  it('documents bodies, answers, error codes, the position headers and the stream event types', async () => {
    const doc = (await h.call('/openapi.json')).body as Doc;
    const steer = doc.paths['/v1/conversations/{key}/steer']!.post;
    expect(steer.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SteerBody' });
    expect(steer.responses['200'].headers['rudder-position']).toBeDefined();
    expect(Object.keys(steer.responses)).toEqual(expect.arrayContaining(['400', '401', '403', '412', '429', '503']));
    const status = doc.paths['/v1/conversations/{key}']!.get;
    expect(status.parameters.map((p: { name: string }) => p.name)).toContain('rudder-min-position');
    expect(doc.components.schemas.ConversationStatus).toMatchObject({ properties: { agent: {}, grants: {} } });
    expect(doc.paths['/v1/conversations/{key}/stop']!.post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/StopBody' });
    expect(doc.components.schemas.StopBody).toMatchObject({ properties: { turn: {}, discardPending: {} } });
    const events = doc.paths['/v1/conversations/{key}/events']!.get;
    expect(Object.keys(events.responses['200'].content)).toEqual(['text/event-stream']);
    for (const type of ['turn.started', 'token', 'tool.started', 'tool.ended', 'steer.accepted', 'steer.taken', 'turn.ended']) {
      expect(streamEventTypes()).toContain(type);
      expect(events.description).toContain(`\`${type}\``);
    }
    expect(JSON.stringify(doc.components.schemas.Error)).toContain('queue_full');
  });
});

describe('GET /docs', () => {
  it('is a self-contained HTML page listing every route', async () => {
    const answer = await h.call('/docs');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toContain('text/html');
    const page = String(answer.body);
    expect(page).not.toMatch(/<script|<link|https?:\/\/(?!127)/);
    expect(page).toContain('/v1/conversations/{key}/steer');
    expect(page).toContain('Rudder-Position'.toLowerCase());
    expect(page).toContain('queue_full');
  });
});
