import { ErrorAnswer, HealthAnswer } from '@rudder/contracts';
import { z } from 'zod';
import { json } from '../http/openapi';
import { route, type Routes } from '../http/route';

export const OPERATION_ROUTES = {
  health: route('get', '/healthz', '200 once Kafka and the database answer', {
    security: [],
    responses: { '200': { description: 'healthy', ...json(HealthAnswer) }, '503': { description: '`unavailable`, `details` names what is down', ...json(ErrorAnswer) } },
  }),
  metrics: route('get', '/metrics', 'Prometheus metrics of this gateway', {
    security: [],
    responses: { '200': { description: 'the text exposition format', content: { 'text/plain': { schema: z.string() } } } },
  }),
  openapi: route('get', '/openapi.json', 'This document', {
    security: [],
    responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: z.object({}).passthrough() } } } },
  }),
  docs: route('get', '/docs', 'This document as a page', {
    security: [],
    responses: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
  }),
} satisfies Routes;
