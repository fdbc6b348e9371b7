/**
 * Not the app's: what its compiler must refuse, so that the test knows it read Rudder's type
 * declarations. An import a declaration file cannot resolve is `any` under `skipLibCheck`, and
 * each line below would then compile (and its `@ts-expect-error` fail the build).
 */
import type { RudderClient } from '@rudder/client';
import type { Log } from '@rudder/runtime';
import type { AgentDefinition, ToolContext } from '@rudder/turn-worker';

// @ts-expect-error: an agent's name is a string
export const misnamed: AgentDefinition = { name: 42, instructions: 'You help.' };
// @ts-expect-error: a tool's context has no such field
export const unknownField = (context: ToolContext) => context.hotel;
// @ts-expect-error: the client has no such method
export const unknownCall = (client: RudderClient) => client.book('key');
// @ts-expect-error: the log has no such level
export const unknownLevel = (log: Log) => log.shout('hello');
