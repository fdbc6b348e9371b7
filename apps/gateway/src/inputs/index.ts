import { joinParts, type GatewayPart } from '../http/route';
import { APPROVAL } from './approval';
import { CHAT } from './chat';
import { GRANT } from './grant';
import { Inputs } from './inputs';
import { PROMOTE } from './promote';
import { RETRACT } from './retract';
import { STEER } from './steer';
import { STOP } from './stop';

/**
 * The input kinds the gateway takes, one folder each: its route entries, its controller and
 * its handler, which builds the kind's record and submits it through the one write path
 * (writes/). A new kind is a folder and a line here.
 */
export const INPUT_KINDS: readonly GatewayPart[] = [CHAT, STEER, STOP, RETRACT, PROMOTE, GRANT, APPROVAL];

/** Every input kind, and the facade through which another door submits them (`Inputs`). */
export const INPUTS: GatewayPart = joinParts([...INPUT_KINDS, { routes: {}, controllers: [], providers: [Inputs] }]);
