import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { argumentsError, defineTool, type Tool } from './tools';

/**
 * A person's edited arguments (`argumentsError`): the model reads them as the call's arguments,
 * so a key the tool would never get is refused like a value its schema refuses.
 */
const got: unknown[] = [];
const send = defineTool({
  name: 'send',
  description: 'Sends an email.',
  parameters: z.object({
    to: z.string(),
    options: z.object({ priority: z.enum(['low', 'high']) }).optional(),
    attachments: z.array(z.object({ name: z.string() })).default([]),
    headers: z.record(z.string(), z.string()).optional(),
    extra: z.looseObject({ tag: z.string().optional() }).optional(),
  }),
  run: async (args) => {
    got.push(args);
    return 'sent';
  },
});

describe("a person's edited arguments", () => {
  it('with a key the zod schema does not know, at any depth, are refused, naming it; the tool would have run without it', async () => {
    expect(argumentsError(send, '{"to":"bob","cc":"mallory"}')).toBe('the tool takes no key "cc"');
    expect(argumentsError(send, '{"to":"bob","options":{"priority":"high","force":true}}')).toBe('the tool takes no key "options.force"');
    expect(argumentsError(send, '{"to":"bob","attachments":[{"name":"a"},{"name":"b","path":"/etc/passwd"}],"bcc":"x"}')).toBe(
      'the tool takes no keys "attachments[1].path", "bcc"',
    );
    // What the model would read and what the tool gets, before this check: the key is gone.
    await send.run({ to: 'bob', cc: 'mallory' }, {} as Parameters<Tool['run']>[1]);
    expect(got.at(-1)).toEqual({ to: 'bob', attachments: [] });
  });

  it('keep what the schema keeps: a record, a loose object, defaults it adds', () => {
    expect(argumentsError(send, '{"to":"bob"}')).toBeNull();
    expect(argumentsError(send, '{"to":"bob","headers":{"X-Any":"1","X-Other":"2"},"extra":{"tag":"t","more":1}}')).toBeNull();
    expect(argumentsError(send, '{"to":"bob","options":{"priority":"low"},"attachments":[{"name":"a"}]}')).toBeNull();
  });

  it('a schema refusal comes first; a refusal of many keys is bounded', () => {
    expect(argumentsError(send, '{"to":5,"cc":"x"}')).toMatch(/to/);
    const many = JSON.stringify(Object.fromEntries([['to', 'bob'], ...Array.from({ length: 500 }, (_, i) => [`unknown_field_${i}`, 1])]));
    const refused = argumentsError(send, many)!;
    expect(refused.length).toBeLessThan(1100);
    expect(refused).toMatch(/^the tool takes no keys "unknown_field_0", .*… \(500 keys\)$/);
  });

  it("of a tool described by its server's JSON Schema: refused for the keys its additionalProperties: false refuses, at any depth; taken where it says nothing", () => {
    const mcp = (inputSchema: Record<string, unknown>): Tool => ({ ...send, inputSchema });
    const strict = mcp({
      type: 'object',
      properties: {
        text: { type: 'string' },
        meta: { type: 'object', properties: { lang: { type: 'string' } }, additionalProperties: false },
        items: { type: 'array', items: { type: 'object', properties: { id: { type: 'number' } }, additionalProperties: false } },
        labels: { type: 'object', additionalProperties: { type: 'object', properties: { v: {} }, additionalProperties: false } },
      },
      patternProperties: { '^x-': { type: 'string' } },
      additionalProperties: false,
    });
    expect(argumentsError(strict, '{"text":"hi","meta":{"lang":"en"},"items":[{"id":1}],"labels":{"a":{"v":1}},"x-trace":"t"}')).toBeNull();
    expect(argumentsError(strict, '{"text":"hi","cc":1}')).toBe('the tool takes no key "cc"');
    expect(argumentsError(strict, '{"meta":{"lang":"en","style":"x"},"items":[{"id":1},{"id":2,"rm":true}],"labels":{"a":{"v":1,"w":2}}}')).toBe(
      'the tool takes no keys "meta.style", "items[1].rm", "labels.a.w"',
    );
    // No additionalProperties (JSON Schema's default: any key): the server gets them as given.
    expect(argumentsError(mcp({ type: 'object', properties: { text: { type: 'string' } } }), '{"text":"hi","anything":1}')).toBeNull();
    expect(argumentsError(mcp({ type: 'object' }), '{"anything":{"deep":1}}')).toBeNull();
    // A pattern this engine cannot read takes every key: the server decides.
    expect(argumentsError(mcp({ type: 'object', patternProperties: { '[z-a]': {} }, additionalProperties: false }), '{"zzz":1}')).toBeNull();
  });
});
