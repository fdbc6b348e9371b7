import { storableJson } from '@rudder/contracts';
import type { EntityManager, EntityMetadata, EntitySchema, ObjectLiteral } from 'typeorm';

/**
 * The fold's set-based statements: many rows of an entity read or written in one statement,
 * as JSON — written with one parameter unpacked by `jsonb_to_recordset`, read as one
 * `json_agg` of objects named by the entity's properties. Each statement is made from the
 * entity's metadata (columns, their types, the key, the transformers), so no column list or
 * snake/camel mapping is written out by hand. The fold does not use TypeORM's
 * `insert().values(rows)` or its entity hydration on this path: binding every value as a
 * parameter of its own cost it four times the CPU per event, hydrating a third more
 * (`bench/companion-fold.ts`); the HTTP queries, a row or a page at a time, do use them.
 * Strings PostgreSQL cannot store are replaced on the way in (`storableJson`).
 */

/**
 * Rows of one entity for `writeRows`, written whole: `upsert` inserts them or replaces every
 * column but the key of the row with the same key; `insertNew` inserts those that are new (a
 * row whose key, or another unique column, is there already is left as it was).
 */
export type RowsWrite = { entity: EntitySchema; rows: readonly ObjectLiteral[]; as: 'upsert' | 'insertNew' };

/**
 * Several entities' rows in ONE statement (distinct tables, no row of one depending on
 * another's): one round trip for every table a batch writes, a statement prepared once per
 * connection under `name` (the same writes, in the same order, every time: a write with no rows
 * is a part that inserts nothing).
 */
export async function writeRows(manager: EntityManager, name: string, writes: readonly RowsWrite[]): Promise<void> {
  if (writes.every((w) => w.rows.length === 0)) return;
  const parts = writes.map((w, i) => `w${i} AS (${statementsOf(manager, w.entity)[w.as].replace('$1::jsonb', `$${i + 1}::jsonb`)})`);
  await prepared(manager, name, `WITH ${parts.join(', ')} SELECT 1`, writes.map((w) => storableJson(w.rows)));
}

/**
 * Runs a statement of the fold prepared once per connection of the transaction's `manager`
 * (TypeORM's `query` has no name to give it): its text is the same every batch, so it is not
 * parsed and planned again each time. Errors are the driver's (with their SQLSTATE `code`).
 */
export async function prepared<T>(manager: EntityManager, name: string, text: string, values: unknown[]): Promise<T[]> {
  if (!manager.queryRunner) throw new Error('prepared() runs inside a transaction');
  const client = (await manager.queryRunner.connect()) as { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: T[] }> };
  return (await client.query({ name, text, values })).rows;
}

/** A subquery whose value is a JSON array of the entity's rows that match `where` (over alias `t`), `[]` for none. */
export const rowsAsJson = (manager: EntityManager, entity: EntitySchema, where: string): string =>
  `(SELECT coalesce(json_agg(${statementsOf(manager, entity).object}), '[]') FROM ${manager.connection.getMetadata(entity).tablePath} AS t WHERE ${where})`;

/**
 * Like `rowsAsJson`, for rows named by their keys: `keys` is a set-returning expression of
 * `(conversation, id)` pairs, and each pair is one index probe (a lateral subquery, `OFFSET 0`
 * so it is not flattened into a join of the whole table), whatever the plan was made for. It is
 * the primary key's once ANALYZE has seen rows; on a table never analyzed, another index on
 * `(conversation, …)` may cost the planner the same (the turns' `turns_by_prompt`), and then the
 * probe reads the conversation's rows and filters on `id`. With `column`, a pair names every
 * row of the conversation whose `column` holds its `id` (the approvals of a turn, by an index
 * on `(conversation, column)`).
 */
export const rowsByKeyAsJson = (manager: EntityManager, entity: EntitySchema, keys: string, column = 'id'): string =>
  `(SELECT coalesce(json_agg(${statementsOf(manager, entity).object}), '[]') FROM ${keys} AS k (conversation, id)
      CROSS JOIN LATERAL (SELECT * FROM ${manager.connection.getMetadata(entity).tablePath} AS row
                           WHERE row.conversation = k.conversation AND row.${column} = k.id OFFSET 0) AS t)`;

/** Rows as `rowsAsJson` gave them, with the columns' transformers applied (positions as numbers, times as ISO strings). */
export function rowsFromJson<T extends ObjectLiteral>(manager: EntityManager, entity: EntitySchema<T>, rows: T[]): T[] {
  const transformed = manager.connection.getMetadata(entity).columns.filter((c) => c.transformer && !Array.isArray(c.transformer));
  for (const row of rows as Record<string, unknown>[])
    for (const column of transformed) row[column.propertyName] = (column.transformer as { from(value: unknown): unknown }).from(row[column.propertyName]);
  return rows;
}

type Statements = { upsert: string; insertNew: string; object: string };
const made = new WeakMap<EntityMetadata, Statements>();

function statementsOf(manager: EntityManager, entity: EntitySchema): Statements {
  const metadata = manager.connection.getMetadata(entity);
  let statements = made.get(metadata);
  if (!statements) {
    statements = make(metadata);
    made.set(metadata, statements);
  }
  return statements;
}

function make(metadata: EntityMetadata): Statements {
  const q = (name: string) => `"${name}"`;
  const columns = metadata.columns.map((c) => ({ column: q(c.databaseName), property: q(c.propertyName), name: c.propertyName, type: String(c.type), primary: c.isPrimary }));
  const insert =
    `INSERT INTO ${metadata.tablePath} (${columns.map((c) => c.column).join(', ')}) ` +
    `SELECT ${columns.map((c) => c.property).join(', ')} ` +
    `FROM jsonb_to_recordset($1::jsonb) AS r(${columns.map((c) => `${c.property} ${c.type}`).join(', ')})`;
  const key = columns.filter((c) => c.primary).map((c) => c.column);
  const rest = columns.filter((c) => !c.primary).map((c) => `${c.column} = excluded.${c.column}`);
  return {
    upsert: `${insert} ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${rest.join(', ')}`,
    insertNew: `${insert} ON CONFLICT DO NOTHING`,
    object: `json_build_object(${columns.map((c) => `'${c.name}', t.${c.column}`).join(', ')})`,
  };
}
