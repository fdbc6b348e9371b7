import { AgentAffordances } from '@rudder/contracts';
import type { Sharded } from '@rudder/runtime';
import type { DataSource } from 'typeorm';
import { Transcript, Turns, type AffordanceRow } from '../read-models/entities';
import { TRANSCRIPT_MESSAGES, type AffordanceKind, type Made, type TranscriptLine } from './model-requests';

/** PostgreSQL's code for a table that does not exist (a worker of this version never started on this database). */
const UNDEFINED_TABLE = '42P01';

/** What the table says of one conversation's affordance now. */
export type Stored =
  | { state: 'made'; position: number; made: Made }
  | { state: 'claimed'; position: number }
  | { state: 'open'; position: number | null };

/**
 * The affordances' rows (`companion.affordances`) and what they are made from, on the read
 * models' database of the conversation's primary. Every companion and so every gateway shares them: the row is both the cache
 * (one per conversation and kind, for the latest position asked about) and the claim by which
 * one companion at a time asks the model. None of these statements touches a conversation's
 * other rows or takes the fold's locks: an affordance never holds the conversation.
 */
export class AffordanceStore {
  /** `readModels`: a conversation's rows are on the primary of its key (`shardMap`). */
  constructor(private readonly readModels: Pick<Sharded<DataSource>, 'forKey'>) {}

  /**
   * The follow-ups and recap settings of the conversation's agent, as its workers registered
   * them (`event_store.agents`): empty (the deployment's) for an agent no worker registered, a
   * row that is not the shape, or a database whose event store has no such table yet.
   */
  async agentAffordances(key: string): Promise<AgentAffordances> {
    let rows: { affordances: unknown }[];
    try {
      rows = (await this.readModels.forKey(key).query(
        `SELECT a.affordances FROM companion.conversations c JOIN event_store.agents a ON a.name = c.state->>'agent' WHERE c.key = $1`,
        [key],
      )) as { affordances: unknown }[];
    } catch (error) {
      if ((error as { code?: string }).code === UNDEFINED_TABLE) return {};
      throw error;
    }
    const parsed = AgentAffordances.safeParse(rows[0]?.affordances ?? {});
    return parsed.success ? parsed.data : {};
  }

  /**
   * The position of the conversation's last `turn.ended` (or `turns.rolledBack`: what was made
   * before it may speak of the turns it took back) the companion folded; null before any turn ended.
   */
  async lastTurnEnded(key: string): Promise<number | null> {
    const rows = (await this.readModels.forKey(key).query(
      `SELECT position FROM companion.events WHERE conversation = $1 AND type IN ('turn.ended', 'turns.rolledBack') ORDER BY position DESC LIMIT 1`,
      [key],
    )) as { position: string }[];
    return rows.length === 0 ? null : Number(rows[0].position);
  }

  /** The transcript as of `position`, without the rolled-back turns: its last TRANSCRIPT_MESSAGES messages, oldest first. */
  async transcriptUpTo(key: string, position: number): Promise<TranscriptLine[]> {
    const rows = await this.readModels.forKey(key).manager
      .createQueryBuilder(Transcript, 'm')
      .select(['m.role', 'm.text', 'm.position', 'm.part'])
      .where('m.conversation = :key', { key })
      .andWhere('m.position <= CAST(:position AS bigint)', { position })
      .andWhere((q) => `NOT EXISTS ${q.subQuery().select('1').from(Turns, 't').where('t.conversation = m.conversation AND t.id = m.turn AND t.rolledBack').getQuery()}`)
      .orderBy('m.position', 'DESC')
      .addOrderBy('m.part', 'DESC')
      .limit(TRANSCRIPT_MESSAGES)
      .getMany();
    return rows.reverse().map(({ role, text }) => ({ role, text }));
  }

  /** The row's state now; a claim counts while its lease runs, by the database's clock (the one claims are written with). */
  async read(key: string, kind: AffordanceKind): Promise<Stored> {
    const rows = (await this.readModels.forKey(key).query(
      `SELECT position, answer, (claim IS NOT NULL AND claimed_until > clock_timestamp()) AS live FROM companion.affordances WHERE conversation = $1 AND kind = $2`,
      [key, kind],
    )) as { position: string; answer: AffordanceRow['answer']; live: boolean }[];
    const row = rows[0];
    if (!row) return { state: 'open', position: null };
    const position = Number(row.position);
    if (row.answer !== null) return { state: 'made', position, made: madeOf(kind, row.answer) };
    return row.live ? { state: 'claimed', position } : { state: 'open', position };
  }

  /**
   * Claims the making of `kind` at `position` for `leaseMs`: true when this caller holds the
   * claim now, false when another does or it is made already. A row of an older position is
   * taken over (what it held is stale); a row of this position is taken only when nothing was
   * made and no live claim holds it (its asker failed, or died with the claim). One statement:
   * the row's lock decides between two companions claiming at once.
   */
  async claim(key: string, kind: AffordanceKind, position: number, claim: string, leaseMs: number): Promise<boolean> {
    const rows = (await this.readModels.forKey(key).query(
      `INSERT INTO companion.affordances AS a (conversation, kind, position, answer, claim, claimed_until, made_at)
       VALUES ($1, $2, $3, NULL, $4, clock_timestamp() + make_interval(secs => $5::double precision / 1000), NULL)
       ON CONFLICT (conversation, kind) DO UPDATE
          SET position = EXCLUDED.position, answer = NULL, claim = EXCLUDED.claim, claimed_until = EXCLUDED.claimed_until, made_at = NULL
        WHERE a.position < EXCLUDED.position
           OR (a.position = EXCLUDED.position AND a.answer IS NULL AND (a.claim IS NULL OR a.claimed_until < clock_timestamp()))
       RETURNING claim`,
      [key, kind, position, claim, leaseMs],
    )) as unknown[];
    return rows.length === 1;
  }

  /** Stores what was made under `claim`; nothing when the claim was taken over meanwhile (a later position). */
  async fulfil(key: string, kind: AffordanceKind, claim: string, made: Made): Promise<void> {
    const answer: AffordanceRow['answer'] = made.kind === 'followups' ? { suggestions: made.suggestions } : { recap: made.recap };
    await this.readModels.forKey(key).query(
      `UPDATE companion.affordances SET answer = $4::jsonb, claim = NULL, claimed_until = NULL, made_at = clock_timestamp()
        WHERE conversation = $1 AND kind = $2 AND claim = $3`,
      [key, kind, claim, JSON.stringify(answer)],
    );
  }

  /** Lets go of `claim` without an answer (the model failed): nothing is cached, the next ask claims again. */
  async release(key: string, kind: AffordanceKind, claim: string): Promise<void> {
    await this.readModels.forKey(key).query(`UPDATE companion.affordances SET claim = NULL, claimed_until = NULL WHERE conversation = $1 AND kind = $2 AND claim = $3`, [
      key,
      kind,
      claim,
    ]);
  }
}

function madeOf(kind: AffordanceKind, answer: NonNullable<AffordanceRow['answer']>): Made {
  if (kind === 'followups') return { kind, suggestions: 'suggestions' in answer ? answer.suggestions : [] };
  return { kind, recap: 'recap' in answer ? answer.recap : '' };
}
