import { adoptHandWrittenSchema } from '@rudder/runtime';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The read models as they stood when migrations moved to TypeORM (the hand-written steps 001 to
 * 006, folded into their result). A database those steps made keeps its tables as they are.
 */
export class ReadModels1764590000000 implements MigrationInterface {
  name = 'ReadModels1764590000000';

  async up(runner: QueryRunner): Promise<void> {
    if (await adoptHandWrittenSchema(runner, 'companion', '006-read-position')) return;
    await runner.query(`
      -- Ids of the events folded so far: an event already here changes nothing when it comes again.
      CREATE TABLE companion.applied_events (
        id text PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE companion.conversations (
        key text PRIMARY KEY,
        -- The subject of the first accepted input (or conversation.opened's owner); null until then.
        owner text,
        last_input_id text,
        last_input_position bigint,
        -- Null when no turn is running.
        running_turn text,
        running_started_at timestamptz,
        -- The agent that answers it (conversation.opened).
        agent text,
        -- Access the owner gave other subjects (access.granted): subject -> 'read' | 'write'.
        grants jsonb NOT NULL DEFAULT '{}',
        -- The position of the last event folded: a read that must reflect a write
        -- (Rudder-Min-Position) waits until this reaches the write's position.
        position bigint NOT NULL DEFAULT 0
      );

      CREATE TABLE companion.inputs (
        conversation text NOT NULL,
        id text NOT NULL,
        kind text NOT NULL,
        text text NOT NULL,
        -- A rejection names only the input's (joined) text: no messages, no subject.
        messages jsonb,
        subject text,
        accepted_at timestamptz NOT NULL,
        position bigint NOT NULL,
        -- The worker's decision on a steer (steer.accepted): null until it is made, and for chats.
        -- steer_landed = true: steer_turn will take it; false: it is answered as a turn of its own.
        steer_turn text,
        steer_landed boolean,
        -- Where it stands: pending until delivered, retracted or discarded; rejected inputs
        -- (input.rejected) were refused and never pending.
        state text NOT NULL DEFAULT 'pending'
          CHECK (state IN ('pending', 'delivered', 'retracted', 'discarded', 'rejected')),
        -- Why it was rejected (input.rejected's code and message); null otherwise.
        rejection_code text,
        rejection_message text,
        -- The position of the stop.requested by which this pending chat interrupted or rolled back
        -- the running turn: it runs next (the latest such chat first). Null otherwise.
        runs_next bigint,
        PRIMARY KEY (conversation, id)
      );
      CREATE INDEX inputs_pending ON companion.inputs (conversation, position) WHERE state = 'pending';

      CREATE TABLE companion.turns (
        conversation text NOT NULL,
        id text NOT NULL,
        prompt_id text NOT NULL,
        prompt_text text NOT NULL,
        -- 'running' until turn.ended, then how it ended.
        status text NOT NULL,
        outcome text,
        content text NOT NULL,
        steered jsonb NOT NULL DEFAULT '[]',
        started_at timestamptz NOT NULL,
        ended_at timestamptz,
        -- The conversation's agent when it started, and the token usage of its replies summed.
        agent text,
        usage jsonb,
        PRIMARY KEY (conversation, id)
      );
      CREATE INDEX turns_by_prompt ON companion.turns (conversation, prompt_id);

      -- Delivered messages, oldest first by (position, part): the position of the event that
      -- delivered them and the index of the row within that event. That pair is the cursor.
      CREATE TABLE companion.transcript (
        conversation text NOT NULL,
        position bigint NOT NULL,
        part integer NOT NULL,
        id text NOT NULL,
        role text NOT NULL CHECK (role IN ('user', 'assistant')),
        text text NOT NULL,
        turn text,
        steered boolean NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (conversation, position, part),
        UNIQUE (conversation, id)
      );

      -- A copy of every event, for SSE replay after Last-Event-ID.
      CREATE TABLE companion.events (
        conversation text NOT NULL,
        position bigint NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        data jsonb NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (conversation, position)
      );
    `);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE companion.applied_events, companion.conversations, companion.inputs, companion.turns, companion.transcript, companion.events');
  }
}
