import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource } from 'typeorm';
import { oneShard } from '@rudder/runtime';
import { createFreshDatabase } from '../../../../test/support/companion/test-database';
import { openReadModels } from '../read-models/data-source';
import { AffordanceStore } from './affordance-store';

/**
 * The affordances' row as cache and claim (`companion.affordances`), on a real PostgreSQL: what
 * keeps two companions from asking the model at once, lets a failed or abandoned claim go, and
 * replaces what a newer turn made stale.
 */
let database: Awaited<ReturnType<typeof createFreshDatabase>>;
let readModels: DataSource;
let store: AffordanceStore;

beforeAll(async () => {
  database = await createFreshDatabase();
  readModels = await openReadModels(database.url);
  store = new AffordanceStore(oneShard(readModels, 1));
});
afterAll(async () => {
  await readModels?.destroy();
  await database?.drop();
});

const LEASE = 60_000;
const made = { kind: 'followups' as const, suggestions: ['What next?'] };

describe('the affordance row', () => {
  it('is claimed by one asker at a time; a released claim (a failure) caches nothing and is claimed again', async () => {
    const key = 'claims/one';
    expect(await store.read(key, 'followups')).toEqual({ state: 'open', position: null });
    expect(await store.claim(key, 'followups', 7, randomUUID(), LEASE)).toBe(true);
    expect(await store.claim(key, 'followups', 7, randomUUID(), LEASE)).toBe(false);
    expect(await store.read(key, 'followups')).toEqual({ state: 'claimed', position: 7 });
    // The recap of the same conversation is a row of its own.
    expect(await store.claim(key, 'recap', 7, randomUUID(), LEASE)).toBe(true);

    const [first] = (await readModels.query(`SELECT claim FROM companion.affordances WHERE conversation = $1 AND kind = 'followups'`, [key])) as { claim: string }[];
    await store.release(key, 'followups', first.claim);
    expect(await store.read(key, 'followups')).toEqual({ state: 'open', position: 7 });
    const second = randomUUID();
    expect(await store.claim(key, 'followups', 7, second, LEASE)).toBe(true);
    await store.fulfil(key, 'followups', second, made);
    expect(await store.read(key, 'followups')).toEqual({ state: 'made', position: 7, made });
    // Made: nobody claims that position again.
    expect(await store.claim(key, 'followups', 7, randomUUID(), LEASE)).toBe(false);
  });

  it('a later turn takes the row over from a made or claimed older one; the older asker then writes nothing', async () => {
    const key = 'claims/later';
    const older = randomUUID();
    expect(await store.claim(key, 'recap', 3, older, LEASE)).toBe(true);
    const newer = randomUUID();
    expect(await store.claim(key, 'recap', 9, newer, LEASE)).toBe(true);
    await store.fulfil(key, 'recap', older, { kind: 'recap', recap: 'stale' });
    expect(await store.read(key, 'recap')).toEqual({ state: 'claimed', position: 9 });
    // Never back to an older position.
    expect(await store.claim(key, 'recap', 3, randomUUID(), LEASE)).toBe(false);
    await store.fulfil(key, 'recap', newer, { kind: 'recap', recap: 'fresh' });
    expect(await store.read(key, 'recap')).toEqual({ state: 'made', position: 9, made: { kind: 'recap', recap: 'fresh' } });
    expect(await store.claim(key, 'recap', 12, randomUUID(), LEASE)).toBe(true);
  });

  it('a claim whose lease ran out (its companion died) is taken over', async () => {
    const key = 'claims/abandoned';
    expect(await store.claim(key, 'followups', 5, randomUUID(), 0)).toBe(true);
    expect(await store.read(key, 'followups')).toEqual({ state: 'open', position: 5 });
    expect(await store.claim(key, 'followups', 5, randomUUID(), LEASE)).toBe(true);
  });

  it('reads the last ended turn and the transcript up to it, oldest first', async () => {
    const key = 'claims/transcript';
    expect(await store.lastTurnEnded(key)).toBeNull();
    const at = new Date().toISOString();
    for (const [position, type] of [[2, 'turn.started'], [5, 'turn.ended'], [6, 'turn.started'], [8, 'turn.ended'], [9, 'turn.started']] as const) {
      await readModels.query(`INSERT INTO companion.events (conversation, position, id, type, data, at) VALUES ($1, $2, $3, $4, '{}', $5)`, [key, position, `e${position}`, type, at]);
    }
    const rows = [
      [2, 0, 'user', 'first'],
      [4, 0, 'assistant', 'first answer'],
      [6, 0, 'user', 'second'],
      [7, 0, 'assistant', 'second answer'],
      [9, 0, 'user', 'third, running'],
    ] as const;
    for (const [position, part, role, text] of rows) {
      await readModels.query(`INSERT INTO companion.transcript (conversation, position, part, id, role, text, turn, steered, at) VALUES ($1, $2, $3, $4, $5, $6, NULL, false, $7)`, [
        key,
        position,
        part,
        `m${position}`,
        role,
        text,
        at,
      ]);
    }
    expect(await store.lastTurnEnded(key)).toBe(8);
    expect(await store.transcriptUpTo(key, 8)).toEqual([
      { role: 'user', text: 'first' },
      { role: 'assistant', text: 'first answer' },
      { role: 'user', text: 'second' },
      { role: 'assistant', text: 'second answer' },
    ]);
    expect(await store.transcriptUpTo(key, 5)).toHaveLength(2);
  });
});
