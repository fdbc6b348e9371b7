import { startSystem, type Infra, type Stack, type StackOptions } from '../test/system';
import { testScript } from '../test/scripts';

export type { Infra };
export type BenchStack = Stack;

/**
 * The system as the tests build it (test/system.ts), answering with the tests' scripted model;
 * `client` is a `@rudder/client` client. The gateway's input limit is off: one load generator is
 * one subject, and the benchmarks measure what the system does, not the limit (docs/security.md).
 */
export const startBenchStack = (infra: Infra, options: Omit<StackOptions, 'script'> = {}): Promise<BenchStack> =>
  startSystem(infra, { script: testScript, ...options, workerEnv: { LIMIT_INPUTS_PER_SECOND: '0', ...options.workerEnv } });
