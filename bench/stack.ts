import { RudderClient } from '@rudder/client';
import { startSystem, type Infra, type Stack, type StackOptions } from '../test/system';
import { testScript } from '../test/scripts';

export type { Infra };
/** The system as the tests build it, and a `@rudder/client` client of its gateway. */
export type BenchStack = Omit<Stack, 'client'> & { client: RudderClient };

/** The system as the tests build it (test/system.ts), answering with the tests' scripted model. */
export async function startBenchStack(infra: Infra, options: Omit<StackOptions, 'script'> = {}): Promise<BenchStack> {
  const stack = await startSystem(infra, { script: testScript, ...options });
  return { ...stack, client: new RudderClient({ baseUrl: stack.gatewayUrl }) };
}
