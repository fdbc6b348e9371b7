import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import pg from 'pg';
import { Topics } from '@rudder/contracts';
import { createTestDatabase } from '@rudder/dev-services';
import { announcementChannel } from '@rudder/runtime';
import { startHarness, steerAccepted, type Harness } from '../../../../test/support/gateway/harness';
import { sseReader } from '../../../../test/support/gateway/sse-reader';

/**
 * The shortest path: what a worker's commit announces on the announcement channel as it
 * commits (`NOTIFY`, an `Announcement`) answers the write waiting for it, with nothing on
 * `agent.events`, and reaches the streams that have been through the event before it; what does
 * not follow waits for its records; what does not parse is dropped; a lost connection is
 * listened on again.
 */
let h: Harness;
let db: pg.Client;
let channel: string;
beforeAll(async () => {
  h = await startHarness();
  channel = announcementChannel(h.topics.inputs.slice(0, -Topics.inputs.length));
  db = new pg.Client({ connectionString: inject('databaseUrl') });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await h?.stop();
});

const uniqueKey = (name: string) => `notices-test/${name}-${Math.random().toString(36).slice(2, 8)}`;
const announce = (payload: unknown) => db.query('SELECT pg_notify($1, $2)', [channel, typeof payload === 'string' ? payload : JSON.stringify(payload)]);
let position = 5000;

/** Sends a steer, and once it is on agent.inputs announces its decision (nothing goes to agent.events); answers the HTTP answer. */
async function steerAnsweredByNotice(key: string, id: string) {
  const pending = h.call(`/v1/conversations/${encodeURIComponent(key)}/steer`, { body: { text: 'use Celsius', id } });
  await h.inputArrived(id);
  const decision = steerAccepted(key, position++, { id, text: 'use Celsius', turn: 't-1', landed: true });
  await announce({ conversation: key, after: decision.position - 1, events: [decision] });
  return { answer: await pending, decision };
}

describe('announced decisions', () => {
  it('with several primaries, are heard on each: a decision announced on the second answers the write waiting for it', async () => {
    // NOTIFY reaches the listeners of its own database only: a second database is a second primary here.
    const second = await createTestDatabase(inject('databaseUrl'));
    const two = await startHarness({ DATABASE_URLS: `${inject('databaseUrl')},${second.url}` });
    const client = new pg.Client({ connectionString: second.url });
    try {
      await client.connect();
      const key = uniqueKey('second-primary');
      const pending = two.call(`/v1/conversations/${encodeURIComponent(key)}/steer`, { body: { text: 'use Celsius', id: 's1' } });
      await two.inputArrived('s1');
      const decision = steerAccepted(key, position++, { id: 's1', text: 'use Celsius', turn: 't-1', landed: true });
      const twoChannel = announcementChannel(two.topics.inputs.slice(0, -Topics.inputs.length));
      // Announced until heard: the gateway may still be connecting its listener on the second primary.
      const timer = setInterval(() => void client.query('SELECT pg_notify($1, $2)', [twoChannel, JSON.stringify({ conversation: key, after: decision.position - 1, events: [decision] })]).catch(() => undefined), 100);
      const answer = await pending.finally(() => clearInterval(timer));
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ id: 's1', turn: 't-1', landed: true });
    } finally {
      await client.end().catch(() => undefined);
      await two.stop();
      await second.drop();
    }
  });

  it('answer the write waiting for them, with nothing on agent.events', async () => {
    const { answer, decision } = await steerAnsweredByNotice(uniqueKey('steer'), 's1');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: 's1', turn: 't-1', landed: true });
    expect(answer.headers.get('rudder-position')).toBe(String(decision.position));
  });

  it('reach a stream when they follow the last event it carried; one that does not waits for its records', async () => {
    const key = uniqueKey('stream');
    const stream = sseReader(await fetch(`${h.gateway.url}/v1/conversations/${encodeURIComponent(key)}/events`));
    const steer = (n: number) => steerAccepted(key, position + n, { id: `s-${n}`, text: 'use Celsius', turn: 't-1', landed: true });
    const [first, second, third, fourth] = [steer(0), steer(1), steer(2), steer(3)];
    position += 4;
    await h.publishEvents([first]);
    expect((await stream.next()).id).toBe(String(first.position));
    // Announced, never published: the stream carries it.
    await announce({ conversation: key, after: first.position, events: [second] });
    expect((await stream.next()).id).toBe(String(second.position));
    // After an event the stream has not had (its announcement did not come): nothing until the records.
    await announce({ conversation: key, after: third.position, events: [fourth] });
    expect(await stream.quietFor(300)).toEqual([]);
    await h.publishEvents([second, third, fourth]);
    expect((await stream.next()).id).toBe(String(third.position));
    expect((await stream.next()).id).toBe(String(fourth.position));
    expect(await stream.quietFor(200)).toEqual([]);
    await stream.close();
  });

  it('one that does not parse is dropped, and the next one is taken', async () => {
    await announce('not json');
    await announce([{ type: 'steer.accepted' }]);
    await announce({ conversation: 'not a key!', after: 0, events: [] });
    const { answer } = await steerAnsweredByNotice(uniqueKey('after-garbage'), 's2');
    expect(answer.status).toBe(200);
  });

  it('a lost connection is listened on again', async () => {
    // This gateway's connection alone (its LISTEN, the session's last statement, names the harness's
    // own channel): other files' gateways share the database, and one of theirs listening again
    // must not pass for this one.
    const ours = `application_name = 'rudder-gateway-announcements' AND datname = current_database() AND query = 'LISTEN "${channel}"'`;
    const { rows } = await db.query<{ pid: number }>(`SELECT pid, pg_terminate_backend(pid) FROM (SELECT pid FROM pg_stat_activity WHERE ${ours} OFFSET 0) AS listening`);
    expect(rows).toHaveLength(1);
    await vi.waitFor(async () => {
      // Connected again (another session), and its LISTEN run.
      const listening = await db.query(`SELECT 1 FROM pg_stat_activity WHERE ${ours} AND pid <> $1`, [rows[0].pid]);
      expect(listening.rowCount).toBe(1);
    }, { timeout: 15_000, interval: 100 });
    const { answer } = await steerAnsweredByNotice(uniqueKey('after-loss'), 's3');
    expect(answer.status).toBe(200);
  });
});

describe('a gateway whose database does not answer', () => {
  it('starts, and answers writes from agent.events', async () => {
    const down = await startHarness({ DATABASE_URL: 'postgres://nobody:none@127.0.0.1:1/none' });
    try {
      down.worker = (input) => (input.type === 'steer' ? [steerAccepted(input.conversation, 7000, { id: input.id, text: input.text, turn: 't-1', landed: true })] : undefined);
      const answer = await down.call(`/v1/conversations/${encodeURIComponent(uniqueKey('no-db'))}/steer`, { body: { text: 'use Celsius', id: 'n1' } });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ id: 'n1', turn: 't-1', landed: true });
    } finally {
      await down.stop();
    }
  });
});
