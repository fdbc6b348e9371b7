import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agents the deployment's workers run, as the companion needs them (docs/architecture.md,
 * "Beside the turn"): each agent's follow-ups and recap settings (its prompts, its model's
 * name). A worker writes its agents' rows at start-up; the companion reads the row of a
 * conversation's agent when it makes an affordance. The latest worker to start wins a name.
 */
export class Agents1765300000000 implements MigrationInterface {
  name = 'Agents1765300000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE event_store.agents (
        name text PRIMARY KEY,
        affordances jsonb NOT NULL DEFAULT '{}',
        registered_at timestamptz NOT NULL DEFAULT now()
      );
    `);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE event_store.agents');
  }
}
