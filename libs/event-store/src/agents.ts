import type { AgentAffordances } from '@rudder/contracts';
import type { Pool } from '@rudder/runtime';

/**
 * Writes the rows of the agents a worker runs (`event_store.agents`): each one's affordance
 * settings, replacing what an earlier start wrote under the name. One statement.
 */
export async function registerAgents(pool: Pool, agents: readonly { name: string; affordances: AgentAffordances }[]): Promise<void> {
  if (agents.length === 0) return;
  await pool.query(
    `INSERT INTO event_store.agents (name, affordances)
     SELECT name, affordances FROM jsonb_to_recordset($1::jsonb) AS a(name text, affordances jsonb)
     ON CONFLICT (name) DO UPDATE SET affordances = EXCLUDED.affordances, registered_at = now()`,
    [JSON.stringify(agents)],
  );
}
