/**
 * Growing from N to M PostgreSQL primaries (docs/operations.md, "Growing from N to M
 * primaries"; `npm run grow-primaries`): the partitions whose shard changes (`planGrowth`)
 * move, every row of their conversations with them, from their primary before to their primary
 * after. Run while every turn worker and companion is stopped (the gateways may keep taking
 * inputs: they wait in Kafka); it refuses to start while another session than ours and the
 * gateways' is connected to one of the primaries.
 *
 * For each (source, destination): the moving partitions are fenced on the source (a new epoch
 * and `moved_to`: no worker can take them there again, fencing.ts); their conversations' rows
 * are read in one snapshot of the source and written to the destination in one transaction,
 * which checks the counts and sets the destination's position sequence past every position of
 * the source, so a moved conversation's positions stay what they were and its next ones come
 * after them; then they are deleted from the source in one transaction. Run again after a
 * failure, it redoes what was not finished: a route whose partitions are fenced and have no
 * conversation left on the source is done; else the destination's copy, whole or partial, is
 * replaced.
 */
import pg from 'pg';
import { openReadModels } from '@rudder/companion';
import { migrateEventStore } from '@rudder/event-store';
import { planGrowth, shardMap, type GrowthPlan, type GrowthRoute } from '@rudder/runtime';

/** How our sessions are named (pg_stat_activity), so the check for live sessions leaves them out. */
export const GROW_APPLICATION_NAME = 'rudder-grow-primaries';

/**
 * Every table of the two schemas on a primary, and how a row belongs to a conversation: the
 * column naming it, or what is done instead. In the order rows are copied (a conversation's
 * row before the rows that reference it); deleted in the reverse order. A table not named here
 * (a later migration's) stops the procedure before it changes anything: it must say how it moves.
 */
const TABLES: readonly { table: string; conversation: string | null; why?: string }[] = [
  { table: 'event_store.conversations', conversation: 'key' },
  { table: 'event_store.events', conversation: 'conversation' },
  { table: 'event_store.snapshots', conversation: 'conversation' },
  { table: 'event_store.partition_owners', conversation: null, why: 'fenced on the source (moved_to), its epoch carried to the destination' },
  { table: 'event_store.agents', conversation: null, why: 'every primary has every agent: copied where missing' },
  { table: 'event_store.typeorm_migrations', conversation: null, why: 'each primary migrated before the move' },
  { table: 'companion.conversations', conversation: 'key' },
  { table: 'companion.inputs', conversation: 'conversation' },
  { table: 'companion.turns', conversation: 'conversation' },
  { table: 'companion.transcript', conversation: 'conversation' },
  { table: 'companion.events', conversation: 'conversation' },
  { table: 'companion.affordances', conversation: 'conversation' },
  { table: 'companion.approvals', conversation: 'conversation' },
  { table: 'companion.typeorm_migrations', conversation: null, why: 'each primary migrated before the move' },
];
const MOVED = TABLES.filter((t): t is { table: string; conversation: string } => t.conversation !== null);

/** Conversations read from the source and written to the destination per statement. */
const CONVERSATIONS_PER_STEP = 200;
/** How long fencing waits for a write in flight under the old epoch (a worker not stopped after all) before it gives up. */
const FENCE_LOCK_TIMEOUT_MS = 5000;

export type GrowthOptions = {
  from: readonly string[];
  to: readonly string[];
  /** KAFKA_PARTITIONS. */
  partitions: number;
  log?: (line: string) => void;
};

export type RouteReport = GrowthRoute & { conversations: number; rows: Record<string, number>; done: 'moved' | 'already moved' };
export type GrowthReport = { plan: GrowthPlan; routes: RouteReport[] };

/** Why the procedure would not run now: sessions other than ours and the gateways' on a primary. */
export class PrimariesInUseError extends Error {}

const connect = async (url: string): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString: url, application_name: GROW_APPLICATION_NAME });
  client.on('error', () => undefined);
  await client.connect();
  return client;
};

/** The whole procedure (see above); throws, having changed nothing, when it refuses to run. */
export async function growPrimaries(options: GrowthOptions): Promise<GrowthReport> {
  const log = options.log ?? (() => undefined);
  const plan = planGrowth(options.from, options.to, options.partitions);
  log(`growing from ${plan.from.length} to ${plan.to.length} primaries over ${plan.partitions} partitions: ${plan.moves.map((m) => `partition ${m.partition} from shard ${m.source} to ${m.destination}`).join(', ')}`);
  const clients: pg.Client[] = [];
  try {
    for (const url of plan.to) clients.push(await connect(url));
    await refuseLiveSessions(plan, clients);
    for (const client of clients.slice(0, plan.from.length)) await refuseSplitConversations(client, plan);
    // Every primary gets the current schemas (a new one gets them whole) before anything is copied.
    for (const url of plan.to) {
      await migrateEventStore(url);
      await (await openReadModels(url)).destroy();
    }
    for (const [shard, client] of clients.entries()) await refuseUnknownTables(client, plan.to[shard]);
    const routes: RouteReport[] = [];
    for (const route of plan.routes) {
      const report = await moveRoute(clients[route.source], clients[route.destination], route);
      log(
        `partitions ${route.partitions.join(', ')} from shard ${route.source} to ${route.destination}: ${report.done}, ${report.conversations} conversations (${Object.entries(report.rows)
          .map(([table, n]) => `${table} ${n}`)
          .join(', ')})`,
      );
      routes.push(report);
    }
    return { plan, routes };
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }
}

/**
 * Every session on a primary's database but ours and the gateways' (which only listen and
 * check health) is taken for a worker or companion still running: one of them could write a
 * moving partition while it moves. The operator stops them first.
 */
async function refuseLiveSessions(plan: GrowthPlan, clients: pg.Client[]): Promise<void> {
  const found: string[] = [];
  for (const [shard, client] of clients.entries()) {
    const { rows } = await client.query<{ pid: number; application_name: string; client_addr: string | null; backend_start: Date }>(
      `SELECT pid, application_name, client_addr::text, backend_start FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
          AND application_name <> $1 AND application_name NOT LIKE 'rudder-gateway-%'
        ORDER BY pid`,
      [GROW_APPLICATION_NAME],
    );
    for (const row of rows) found.push(`shard ${shard} (${redact(plan.to[shard])}): pid ${row.pid} ${row.application_name || '(no application name)'} from ${row.client_addr ?? 'a local socket'} since ${row.backend_start.toISOString()}`);
  }
  if (found.length > 0) {
    throw new PrimariesInUseError(
      `refusing to move partitions: ${found.length} session(s) other than the gateways' are connected, a turn worker or companion still running could write a moving partition. Stop every turn worker and companion (and close other sessions), then run this again.\n  ${found.join('\n  ')}`,
    );
  }
}

async function refuseUnknownTables(client: pg.Client, url: string): Promise<void> {
  const { rows } = await client.query<{ name: string }>(
    `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
      WHERE table_schema IN ('event_store', 'companion') AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  const unknown = rows.map((r) => r.name).filter((name) => !TABLES.some((t) => t.table === name));
  if (unknown.length > 0) throw new Error(`refusing to move partitions: ${redact(url)} has table(s) this procedure does not know how to move: ${unknown.join(', ')}`);
}

/** Conversations read per statement when every one of a primary is looked at. */
const KEYS_PER_PAGE = 10_000;

/**
 * A conversation first seen on another partition than its key's (a producer with another
 * partitioner) stays on that partition; both were on one primary, else the worker had re-routed
 * it. If the new map puts the two partitions on two primaries, the conversation would be moved
 * by its stored partition while its inputs, re-routed to its key's primary, found none there and
 * started another: refused, naming them. (Every conversation of every old primary is read once.)
 */
async function refuseSplitConversations(client: pg.Client, plan: GrowthPlan): Promise<void> {
  const after = shardMap(plan.to, plan.partitions);
  const split: string[] = [];
  for (let last = ''; ; ) {
    const { rows } = await client.query<{ key: string; partition: number }>('SELECT key, partition FROM event_store.conversations WHERE key > $1 ORDER BY key LIMIT $2', [last, KEYS_PER_PAGE]);
    for (const row of rows) {
      if (after.shardOf(row.partition) !== after.shardOfKey(row.key)) split.push(`${row.key} (on partition ${row.partition}, its key's is ${after.partitionOfKey(row.key)})`);
    }
    if (rows.length < KEYS_PER_PAGE) break;
    last = rows.at(-1)!.key;
  }
  if (split.length > 0) {
    throw new Error(
      `refusing to move partitions: ${split.length} conversation(s) live on another partition than their key's, which the new map puts on another primary (a producer with another partitioner sent their first input): ${split.slice(0, 10).join(', ')}${split.length > 10 ? ', …' : ''}`,
    );
  }
}

/** A URL without its password, for messages. */
const redact = (url: string) => url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');

async function moveRoute(source: pg.Client, destination: pg.Client, route: GrowthRoute): Promise<RouteReport> {
  const { partitions } = route;
  // 1. Fence the partitions on the source: a new epoch no worker holds (every write in flight
  // under an older one fails), and moved_to, which refuses every later take (fencing.ts).
  await source.query(`BEGIN; SET LOCAL lock_timeout = ${FENCE_LOCK_TIMEOUT_MS}`);
  let epochs: Map<number, number>;
  try {
    const { rows } = await source.query<{ partition: number; epoch: string }>(
      `INSERT INTO event_store.partition_owners (partition, epoch, owner, moved_to)
       SELECT p, 1, 'grow-primaries', $2 FROM unnest($1::int[]) AS p
       ON CONFLICT (partition) DO UPDATE
          SET epoch = event_store.partition_owners.epoch + 1, owner = EXCLUDED.owner, moved_to = EXCLUDED.moved_to, taken_at = now()
       RETURNING partition, epoch`,
      [partitions, route.destination],
    );
    await source.query('COMMIT');
    epochs = new Map(rows.map((r) => [r.partition, Number(r.epoch)]));
  } catch (error) {
    await source.query('ROLLBACK').catch(() => undefined);
    throw new Error(`fencing partitions ${partitions.join(', ')} on shard ${route.source} failed (a write in flight still holds one?): ${String(error)}`);
  }

  // 2. Copy: one snapshot of the source, one transaction on the destination.
  await source.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  const rows: Record<string, number> = {};
  let keys: string[];
  try {
    keys = (await source.query<{ key: string }>('SELECT key FROM event_store.conversations WHERE partition = ANY($1::int[]) ORDER BY key', [partitions])).rows.map((r) => r.key);
    if (keys.length === 0) {
      await source.query('COMMIT');
      const left = await destination.query<{ n: number }>('SELECT count(*)::int AS n FROM event_store.conversations WHERE partition = ANY($1::int[])', [partitions]);
      await carryEpochs(destination, epochs);
      return { ...route, conversations: left.rows[0].n, rows, done: 'already moved' };
    }
    const sourceLast = await source.query<{ last: string }>(`SELECT last_value AS last FROM event_store.events_position_seq`);
    await destination.query('BEGIN');
    try {
      // What an interrupted run left here goes first: the source still holds all of it.
      for (const { table, conversation } of [...MOVED].reverse()) await destination.query(`DELETE FROM ${table} WHERE ${conversation} = ANY($1::text[])`, [keys]);
      for (let i = 0; i < keys.length; i += CONVERSATIONS_PER_STEP) {
        const step = keys.slice(i, i + CONVERSATIONS_PER_STEP);
        for (const { table, conversation } of MOVED) {
          const read = await source.query<{ rows: unknown[] }>(`SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]') AS rows FROM ${table} t WHERE ${conversation} = ANY($1::text[])`, [step]);
          const copied = read.rows[0].rows;
          rows[table] = (rows[table] ?? 0) + copied.length;
          if (copied.length > 0) await destination.query(`INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(null::${table}, $1::jsonb)`, [JSON.stringify(copied)]);
        }
      }
      for (const { table, conversation } of MOVED) {
        const there = await destination.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${conversation} = ANY($1::text[])`, [keys]);
        if (there.rows[0].n !== (rows[table] ?? 0)) throw new Error(`${table}: ${rows[table] ?? 0} rows read on the source, ${there.rows[0].n} on the destination`);
      }
      await destination.query(`INSERT INTO event_store.agents SELECT * FROM jsonb_populate_recordset(null::event_store.agents, $1::jsonb) ON CONFLICT (name) DO NOTHING`, [
        JSON.stringify((await source.query<{ rows: unknown[] }>(`SELECT coalesce(jsonb_agg(to_jsonb(a)), '[]') AS rows FROM event_store.agents a`)).rows[0].rows),
      ]);
      // Positions: every later event here sorts after every event copied (and after every
      // other position the source ever handed out), so a moved conversation's stay increasing.
      await destination.query(
        `SELECT setval('event_store.events_position_seq', greatest((SELECT last_value FROM event_store.events_position_seq), $1::bigint, (SELECT coalesce(max(position), 0) FROM event_store.events)))`,
        [sourceLast.rows[0].last],
      );
      await carryEpochs(destination, epochs);
      await destination.query('COMMIT');
    } catch (error) {
      await destination.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    await source.query('COMMIT');
  } catch (error) {
    await source.query('ROLLBACK').catch(() => undefined);
    throw error;
  }

  // 3. Delete them from the source, in one transaction, once the destination has them all.
  await source.query('BEGIN');
  try {
    for (const { table, conversation } of [...MOVED].reverse()) {
      const deleted = await source.query(`DELETE FROM ${table} WHERE ${conversation} = ANY($1::text[])`, [keys]);
      if ((deleted.rowCount ?? 0) !== (rows[table] ?? 0)) throw new Error(`${table}: ${rows[table] ?? 0} rows copied, ${deleted.rowCount} to delete on the source`);
    }
    await source.query('COMMIT');
  } catch (error) {
    await source.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return { ...route, conversations: keys.length, rows, done: 'moved' };
}

/**
 * The moved partitions' owner rows on the destination: their epochs go on from the fence's
 * (never back, whichever primary is asked), owned by nobody until a worker takes them.
 */
async function carryEpochs(destination: pg.Client, epochs: Map<number, number>): Promise<void> {
  const { rows } = await destination.query<{ partition: number }>(
    `INSERT INTO event_store.partition_owners (partition, epoch, owner)
     SELECT * FROM unnest($1::int[], $2::bigint[], $3::text[])
     ON CONFLICT (partition) DO UPDATE SET epoch = greatest(event_store.partition_owners.epoch, EXCLUDED.epoch), owner = EXCLUDED.owner, taken_at = now()
      WHERE event_store.partition_owners.moved_to IS NULL
     RETURNING partition`,
    [[...epochs.keys()], [...epochs.values()], [...epochs.keys()].map(() => 'grow-primaries')],
  );
  if (rows.length !== epochs.size) throw new Error(`partitions ${[...epochs.keys()].join(', ')}: the destination says one was moved off it before; the primaries are not in the order they grew`);
}
