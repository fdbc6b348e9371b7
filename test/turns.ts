import type { RudderClient } from '@rudder/client';
import type { TurnView } from '@rudder/contracts';
import { vi } from 'vitest';
import { WAIT } from './system';

/** The turn that answered an input, once it has ended. */
export const answered = (client: RudderClient, key: string, input: string, timeoutMs = 30_000): Promise<TurnView> =>
  vi.waitFor(
    async () => {
      const turn = await client.turnOf(key, input).catch((error: unknown) => {
        throw new Error(`waiting for the answer to ${input} in ${key}: ${String(error)}`);
      });
      if (turn.status === 'running') throw new Error(`waiting for the answer to ${input} in ${key}: turn ${turn.id} runs`);
      return turn;
    },
    { ...WAIT, timeout: timeoutMs },
  );

/** The turn answering an input, once it has started (a `not_found` RudderError until then). */
export const started = (client: RudderClient, key: string, input: string, timeoutMs = 30_000): Promise<TurnView> =>
  vi.waitFor(
    () =>
      client.turnOf(key, input).catch((error: unknown) => {
        throw new Error(`waiting for a turn for ${input} in ${key}: ${String(error)}`);
      }),
    { ...WAIT, timeout: timeoutMs },
  );
