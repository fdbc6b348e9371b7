import type { Pool } from '@rudder/runtime';
import type { Config } from '@rudder/runtime';
import type { AgentDefinition } from './agents/agent-definition';

export const TURN_WORKER_OPTIONS = Symbol('TURN_WORKER_OPTIONS');

export type TurnWorkerOptions = {
  /** The agents this deployment runs (every worker of the group registers the same). */
  agents: AgentDefinition[];
  /** The agent of conversations whose first chat names none. Default: the first of `agents`. */
  defaultAgent?: string;
  /** Default: read from the environment. */
  config?: Config;
  /** A pool of your own (the benchmarks count its statements). Default: one on DATABASE_URL. */
  pool?: Pool;
};
