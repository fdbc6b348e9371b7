import { evolve, onceKey } from './event-rules';
import { hasOpenWork, parseState } from './state';

/** The stream's rules as the event store needs them (`StreamRules`). */
export const conversationRules = { parse: parseState, evolve, onceKey, hasOpenWork } as const;
