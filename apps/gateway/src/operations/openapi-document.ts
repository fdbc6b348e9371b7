import { createDocument, type ZodOpenApiPathsObject } from 'zod-openapi';
import type { Routes } from '../http/route';

function paths(routes: Routes): ZodOpenApiPathsObject {
  const paths: ZodOpenApiPathsObject = {};
  for (const [operationId, { method, path, operation }] of Object.entries(routes)) paths[path] = { ...paths[path], [method]: { summary: operation.summary, operationId, ...operation } };
  return paths;
}

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the route table (`ROUTES` of
 * routes.ts, which also routes the controllers) and the zod contracts of libs/contracts it names.
 */
export function openApiDocument(routes: Routes): ReturnType<typeof createDocument> {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Rudder HTTP API',
      version: '1',
      description:
        'Steerable AI-agent conversations. Every route but /healthz, /metrics, /openapi.json, /docs and the web chat (/, /app.js) takes `Authorization: Bearer <token>`. Errors are `{error: {code, message, details?}}` with stable codes. See docs/api.md.',
    },
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths: paths(routes),
  });
}
