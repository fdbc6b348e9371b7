import type { Log } from '@rudder/runtime';
import type { AgentRegistry } from '../agents/agents';
import type { FaultPoint } from '../fault-points';
import type { WorkerMetrics } from '../metrics/worker-metrics';
import type { Publishing } from '../publishing';
import type { TurnStore } from './turn-store';

/** How the worker's runners are set up. */
export type RunnerOptions = {
  log: Log;
  /** The fault points the tests stop the worker at (`CRASH_AT`, `PAUSE_AT`). */
  fault(point: FaultPoint): void;
  /** How long a runner waits after a failed write (fenced, say) before it reads the log again. */
  retryMs: number;
  /** A snapshot of the fold is stored once the log has grown by this many events since the last one. */
  snapshotEvery: number;
};

/** What every conversation runner of the worker works with: a few collaborators, each one shared by all the runners. */
export type RunnerServices = {
  /** The event store as the runners write it. */
  store: TurnStore;
  /**
   * The deployment's agents: the one that answers a conversation, how many earlier turns a fold
   * keeps (the largest `history.turns`), and the policies a schedule's firing is decided by.
   */
  agents: Pick<AgentRegistry, 'get' | 'historyKept' | 'defaultAgent' | 'policyOf'>;
  /** A step's tokens: held back and coalesced (`token`), sent before the step's reply is stored (`flushTokens`), so they go out before its events. */
  tokens: Pick<Publishing, 'token' | 'flushTokens'>;
  /** What the runners count: a fenced write, a model request sent ahead of a commit used or thrown away. */
  metrics: Pick<WorkerMetrics, 'fenced' | 'ahead'>;
  options: RunnerOptions;
};
