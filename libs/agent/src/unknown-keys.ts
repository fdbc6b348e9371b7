/**
 * The keys of `given` that `kept` — what a tool's zod schema made of it — no longer has, as
 * paths (`cc`, `options.force`, `to[1].name`): a zod object drops the keys it does not know, so
 * the tool never gets them. Objects are compared key by key and arrays of the same length item
 * by item, at any depth; where the schema made something else of a value (a transform), its
 * insides are not compared.
 */
export function droppedKeys(given: unknown, kept: unknown, path = ''): string[] {
  if (Array.isArray(given)) {
    return Array.isArray(kept) && kept.length === given.length ? given.flatMap((item, i) => droppedKeys(item, kept[i], `${path}[${i}]`)) : [];
  }
  if (!isPlainObject(given) || !isPlainObject(kept)) return [];
  return Object.keys(given).flatMap((key) => (Object.hasOwn(kept, key) ? droppedKeys(given[key], kept[key], at(path, key)) : [at(path, key)]));
}

/**
 * The keys of `value` a JSON Schema refuses as unknown: those of an object whose schema says
 * `additionalProperties: false` that neither its `properties` nor its `patternProperties` name,
 * at any depth its `properties`, `additionalProperties` and `items` describe. A schema that says
 * nothing of extra keys takes them (they reach the tool as given); combinators (`allOf`,
 * `anyOf`, `$ref`, …) are left to the tool's server.
 */
export function keysOutsideSchema(schema: unknown, value: unknown, path = ''): string[] {
  if (!isPlainObject(schema)) return [];
  if (Array.isArray(value)) return isPlainObject(schema.items) ? value.flatMap((item, i) => keysOutsideSchema(schema.items, item, `${path}[${i}]`)) : [];
  if (!isPlainObject(value)) return [];
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const patterns = isPlainObject(schema.patternProperties) ? Object.keys(schema.patternProperties).map(pattern) : [];
  const extra = schema.additionalProperties;
  return Object.keys(value).flatMap((key) => {
    if (Object.hasOwn(properties, key)) return keysOutsideSchema(properties[key], value[key], at(path, key));
    if (patterns.some((matches) => matches(key))) return [];
    return extra === false ? [at(path, key)] : keysOutsideSchema(extra, value[key], at(path, key));
  });
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && [Object.prototype, null].includes(Object.getPrototypeOf(value) as object | null);

const at = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);

/** A `patternProperties` pattern as a test of a key; one this engine cannot read takes every key (its server decides). */
function pattern(source: string): (key: string) => boolean {
  try {
    const regex = new RegExp(source, 'u');
    return (key) => regex.test(key);
  } catch {
    return () => true;
  }
}
