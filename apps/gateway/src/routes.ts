import { EVENTS } from './events';
import { joinParts, type GatewayPart, type Routes } from './http/route';
import { INPUTS } from './inputs';
import { OPERATIONS } from './operations';
import { READS } from './reads';
import { RESPONSES } from './responses';
import { WEB } from './web';

/**
 * The gateway's parts, each its route entries, controllers and providers: the input kinds
 * (inputs/, one folder each), the reads through the companion, the event stream, the Responses
 * door, what operators read, the web chat. The module (gateway.module.ts) is made of them.
 */
export const PARTS: readonly GatewayPart[] = [INPUTS, READS, EVENTS, RESPONSES, OPERATIONS, WEB];

/**
 * The HTTP API's route table: every route once, by operation id, as its part lists it. The
 * controllers are routed by their entries (`@Route`: method, path and success status) and the
 * OpenAPI document is generated from it (operations/openapi-document.ts). The contracts' zod
 * schemas give the bodies and answers (libs/contracts: `ChatBody`…, `answers.ts`); `security:
 * []` marks a route open to anyone, the others take a bearer token; a write answers
 * `Rudder-Position`.
 */
export const ROUTES: Routes = joinParts(PARTS).routes;
