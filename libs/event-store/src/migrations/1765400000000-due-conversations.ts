import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When something is due in a conversation with no input to wake it — a call's approval timing
 * out (docs/architecture.md, "Approvals") — its state says so (`dueAt`, ISO 8601 in UTC, which
 * sorts as time). This index lets a worker find the due conversations of its partitions, and
 * the next moment one falls due, without holding any of them in memory.
 */
export class DueConversations1765400000000 implements MigrationInterface {
  name = 'DueConversations1765400000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE INDEX conversations_due ON event_store.conversations (partition, (head->>'dueAt')) WHERE head->>'dueAt' IS NOT NULL`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX event_store.conversations_due');
  }
}
