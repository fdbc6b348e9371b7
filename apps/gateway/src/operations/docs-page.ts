import type { createDocument } from 'zod-openapi';

type Document = ReturnType<typeof createDocument>;
/** The parts of an OpenAPI operation the page shows. */
type Media = { schema?: unknown };
type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string; required?: boolean; description?: string }[];
  requestBody?: { required?: boolean; content?: Record<string, Media> };
  responses: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, Media> }>;
};
const isOperation = (value: unknown): value is Operation => typeof value === 'object' && value !== null && 'responses' in value;

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const code = (text: string): string => escape(text).replace(/`([^`]+)`/g, '<code>$1</code>');
const pre = (value: unknown): string => `<pre>${escape(JSON.stringify(value, null, 2))}</pre>`;
const ref = (schema: unknown): string => {
  const target = (schema as { $ref?: string } | undefined)?.$ref;
  return target ? `<a href="#${escape(target.split('/').pop()!)}">${escape(target.split('/').pop()!)}</a>` : pre(schema);
};

/**
 * `/docs`: the OpenAPI document as one self-contained HTML page (no script, no stylesheet or
 * font from anywhere else): every route with its parameters, body, answers and error codes,
 * then every schema. Made from the same document `/openapi.json` serves.
 */
export function docsPage(document: Document): string {
  const routes: string[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item ?? {})) {
      if (!isOperation(operation)) continue;
      const params = operation.parameters ?? [];
      const body = Object.entries(operation.requestBody?.content ?? {});
      const answers = Object.entries(operation.responses).map(([status, answer]) => {
        const contents = Object.entries(answer.content ?? {})
          .map(([type, media]) => `<div>${escape(type)}: ${ref(media.schema)}</div>`)
          .join('');
        const headers = Object.keys(answer.headers ?? {}).map((h) => `<div>header <code>${escape(h)}</code></div>`).join('');
        return `<li><b>${escape(status)}</b> ${code(answer.description ?? '')}${headers}${contents}</li>`;
      });
      routes.push(`<section id="${escape(operation.operationId ?? '')}">
<h3><span class="method">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${code(operation.summary ?? '')}</p>${operation.description ? `<p>${code(operation.description)}</p>` : ''}
${params.length ? `<h4>Parameters</h4><ul>${params.map((p) => `<li><code>${escape(p.name)}</code> (${escape(p.in)}${p.required ? ', required' : ''}) ${code(p.description ?? '')}</li>`).join('')}</ul>` : ''}
${body.length ? `<h4>Body${operation.requestBody?.required ? '' : ' (optional)'}</h4>${body.map(([type, media]) => `<div>${escape(type)}: ${ref(media.schema)}</div>`).join('')}` : ''}
<h4>Answers</h4><ul>${answers.join('')}</ul></section>`);
    }
  }
  const schemas = Object.entries(document.components?.schemas ?? {}).map(
    ([name, schema]) => `<section id="${escape(name)}"><h3>${escape(name)}</h3>${pre(schema)}</section>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(document.info.title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}pre{background:#f4f4f4;padding:.5rem;overflow:auto;max-height:30rem}
section{border-top:1px solid #ddd;margin-top:1rem}.method{background:rgb(34,51,68);color:#fff;padding:0 .4rem;border-radius:3px}</style></head>
<body><h1>${escape(document.info.title)} v${escape(document.info.version)}</h1><p>${code(document.info.description ?? '')}</p>
<p>The machine-readable document: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${escape(document.openapi)}).</p>
<h2>Routes</h2>${routes.join('\n')}<h2>Schemas</h2>${schemas.join('\n')}</body></html>`;
}
