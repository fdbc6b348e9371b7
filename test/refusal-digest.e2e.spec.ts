import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WAIT, holding, startStack, type Stack } from './stack';
import { testScript } from './scripts';

/**
 * A refused input keeps no text: `input.rejected` (record version 2) stores the
 * SHA-256 of the input's text, so inputs refused for a full queue — up to 32 of 8,000
 * characters a burst, never served — do not grow the event log or the read models, and the
 * same id sent again is still told apart: the same text gets the same refusal, other text is
 * another input under a used id (422).
 */
let stack: Stack;
let db: pg.Pool;
beforeAll(async () => {
  stack = await startStack({ script: testScript });
  db = new pg.Pool({ connectionString: stack.env.DATABASE_URL, max: 2 });
});
afterAll(async () => {
  await db?.end();
  await stack?.stop();
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Rows of every table of `schema` whose JSON holds `marker`, as `table: count`. */
async function rowsHolding(schema: string, marker: string): Promise<Record<string, number>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`,
    [schema],
  );
  expect(tables.length).toBeGreaterThan(0);
  const found: Record<string, number> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${name} t WHERE row_to_json(t)::text LIKE $1`, [`%${marker}%`]);
    if (rows[0].n > 0) found[name] = rows[0].n;
  }
  return found;
}

describe('a refusal keeps a digest of the text, not the text', () => {
  it('a chat and a steer refused for full queues leave their text in no table of the event store or the companion; the same id with the same text gets the same refusal, with other text 422 id_reused', async () => {
    const { http } = stack;
    const conversation = `refusals/${randomBytes(4).toString('hex')}`;
    const held = await holding(stack, conversation);
    for (const n of [1, 2, 3, 4]) {
      expect((await http.post(conversation, '/chat', { text: `f${n}`, id: `f${n}` })).status).toBe(202);
      expect((await http.post(conversation, '/steer', { text: `s${n}`, id: `s${n}` })).status).toBe(200);
    }
    const marker = `never-served-${randomBytes(6).toString('hex')}`;
    const chatText = `${marker} chat, served never`;
    const steerText = `${marker} steer, served never`;

    const chat = await http.post(conversation, '/chat', { text: chatText, id: 'spam-chat' });
    expect(chat.status).toBe(429);
    expect(chat.body.error).toMatchObject({ code: 'queue_full' });
    const steer = await http.post(conversation, '/steer', { text: steerText, id: 'spam-steer' });
    expect(steer.status).toBe(429);
    expect(steer.body.error).toMatchObject({ code: 'queue_full' });

    // Once the companion has folded them, neither text is anywhere.
    await vi.waitFor(async () => {
      const { rows } = await db.query(`SELECT 1 FROM companion.inputs WHERE conversation = $1 AND id = ANY($2) AND state = 'rejected'`, [conversation, ['spam-chat', 'spam-steer']]);
      expect(rows).toHaveLength(2);
    }, WAIT);
    expect(await rowsHolding('event_store', marker)).toEqual({});
    expect(await rowsHolding('companion', marker)).toEqual({});

    // Both refusals are in the log, each with its text's digest.
    const { rows: refusals } = await db.query<{ data: { input: Record<string, unknown> } }>(
      `SELECT data FROM event_store.events WHERE conversation = $1 AND type = 'input.rejected' ORDER BY position`,
      [conversation],
    );
    expect(refusals.map((r) => r.data.input)).toEqual([
      { id: 'spam-chat', kind: 'chat', digest: sha256(chatText) },
      { id: 'spam-steer', kind: 'steer', digest: sha256(steerText) },
    ]);

    // The same id and text again: the same refusal (answered from the companion's digest).
    const chatAgain = await http.post(conversation, '/chat', { text: chatText, id: 'spam-chat' });
    expect([chatAgain.status, chatAgain.body.error?.code, chatAgain.body.error?.message]).toEqual([429, 'queue_full', chat.body.error.message]);
    const steerAgain = await http.post(conversation, '/steer', { text: steerText, id: 'spam-steer' });
    expect([steerAgain.status, steerAgain.body.error?.code, steerAgain.body.error?.message]).toEqual([429, 'queue_full', steer.body.error.message]);
    // The same id with other text: another input under a used id.
    const chatOther = await http.post(conversation, '/chat', { text: 'something else', id: 'spam-chat' });
    expect([chatOther.status, chatOther.body.error?.code]).toEqual([422, 'id_reused']);
    const steerOther = await http.post(conversation, '/steer', { text: 'something else', id: 'spam-steer' });
    expect([steerOther.status, steerOther.body.error?.code]).toEqual([422, 'id_reused']);

    await held.open();
  });
});
