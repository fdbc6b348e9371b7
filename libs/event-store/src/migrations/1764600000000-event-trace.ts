import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The W3C traceparent of the write that stored each event (null when tracing is off): the
 * outbox relay publishes the rows later, in the trace of the turn that wrote them.
 */
export class EventTrace1764600000000 implements MigrationInterface {
  name = 'EventTrace1764600000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE event_store.events ADD COLUMN IF NOT EXISTS trace text');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE event_store.events DROP COLUMN trace');
  }
}
