import { upcastEventData, type ConversationEvent } from '@rudder/contracts';
import { initialState, type ConversationState } from '@rudder/conversation';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { foldState, isKnownEvent } from '../../projection/conversation-state';

/** Conversations backfilled per statement: their copies are read and folded in memory together. */
const CONVERSATIONS_PER_STEP = 200;

/**
 * A conversation's status is its state as the worker's `evolve` folds it: the queue and
 * steering rules live in libs/conversation only. `companion.conversations.state` holds it; the
 * columns the companion's own rules kept (owner, agent, grants, the last input, the running
 * turn; each input's `runs_next`) go.
 *
 * Backfill here, not lazily: every conversation's state is folded from its copies in
 * `companion.events` (every event the companion folded, in log order), CONVERSATIONS_PER_STEP
 * at a time, so the fold and the status read never meet a conversation without one. An older
 * companion does not write the state: stop the older companions before the first new one starts
 * (it runs this at start, under the schema's migration lock).
 */
export class ConversationState1765100000000 implements MigrationInterface {
  name = 'ConversationState1765100000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE companion.conversations ADD COLUMN state jsonb`);
    await runner.query(
      `COMMENT ON COLUMN companion.conversations.state IS 'The conversation''s state as the worker''s evolve folds it (libs/conversation ConversationState): owner, agent, grants, running turn, steers, queue, last input.'`,
    );
    const keys = ((await runner.query(`SELECT key FROM companion.conversations ORDER BY key`)) as { key: string }[]).map((r) => r.key);
    for (let i = 0; i < keys.length; i += CONVERSATIONS_PER_STEP) {
      const step = keys.slice(i, i + CONVERSATIONS_PER_STEP);
      const copies = (await runner.query(
        `SELECT conversation, position, type, data FROM companion.events WHERE conversation = ANY($1::text[]) ORDER BY conversation, position`,
        [step],
      )) as { conversation: string; position: string; type: string; data: unknown }[];
      const states = new Map<string, ConversationState>(step.map((key) => [key, initialState()]));
      for (const copy of copies) {
        const event = { type: copy.type, data: upcastEventData(copy.type, copy.data) };
        if (isKnownEvent(event)) states.set(copy.conversation, foldState(states.get(copy.conversation)!, event as ConversationEvent));
      }
      await runner.query(
        `UPDATE companion.conversations AS c SET state = s.state FROM jsonb_to_recordset($1::jsonb) AS s (key text, state jsonb) WHERE c.key = s.key`,
        [JSON.stringify([...states].map(([key, state]) => ({ key, state })))],
      );
    }
    await runner.query(`
      ALTER TABLE companion.conversations ALTER COLUMN state SET NOT NULL,
        DROP COLUMN owner, DROP COLUMN agent, DROP COLUMN grants,
        DROP COLUMN last_input_id, DROP COLUMN last_input_position, DROP COLUMN running_turn;
      ALTER TABLE companion.inputs DROP COLUMN runs_next`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query(`
      ALTER TABLE companion.conversations
        ADD COLUMN owner text, ADD COLUMN agent text, ADD COLUMN grants jsonb NOT NULL DEFAULT '{}',
        ADD COLUMN last_input_id text, ADD COLUMN last_input_position bigint, ADD COLUMN running_turn text;
      UPDATE companion.conversations
         SET owner = state ->> 'owner', agent = state ->> 'agent', grants = state -> 'grants',
             last_input_id = state ->> 'lastInputId', running_turn = state ->> 'runningTurn';
      ALTER TABLE companion.conversations DROP COLUMN state;
      ALTER TABLE companion.inputs ADD COLUMN runs_next bigint`);
  }
}
