import { startSystem, type Infra, type Stack, type StackOptions } from '../test/system';
import { testScript } from '../test/scripts';

export type { Infra };
export type BenchStack = Stack;

/** The system as the tests build it (test/system.ts), answering with the tests' scripted model; `client` is a `@rudder/client` client. */
export const startBenchStack = (infra: Infra, options: Omit<StackOptions, 'script'> = {}): Promise<BenchStack> =>
  startSystem(infra, { script: testScript, ...options });
