import type { InputKind } from '@rudder/contracts';
import { joinParts, type GatewayPart } from '../http/route';
import { APPROVAL } from './approval/approval';
import { CHAT } from './chat/chat';
import { EDIT } from './edit/edit';
import { FORK } from './fork/fork';
import { GRANT } from './grant/grant';
import { Inputs } from './inputs';
import { MOVE } from './move/move';
import { PROMOTE } from './promote/promote';
import { RETRACT } from './retract/retract';
import { ROLLBACK } from './rollback/rollback';
import { SCHEDULE } from './schedule/schedule';
import { STEER } from './steer/steer';
import { STOP } from './stop/stop';

/**
 * The input kinds the gateway takes, one module each (`<kind>/<kind>.ts`, its tests beside it):
 * its route entries, its handler, which builds the kind's record and submits it through the one
 * write path (writes/), and its controller. A new kind is its module and its line here, which
 * the compiler asks for (a table over the contract's kinds).
 */
export const INPUT_KINDS: { readonly [K in InputKind]: GatewayPart } = {
  chat: CHAT,
  steer: STEER,
  stop: STOP,
  retract: RETRACT,
  promote: PROMOTE,
  grant: GRANT,
  approval: APPROVAL,
  edit: EDIT,
  rollback: ROLLBACK,
  move: MOVE,
  fork: FORK,
  schedule: SCHEDULE,
};

/** Every input kind, and the facade through which another door submits them (`Inputs`). */
export const INPUTS: GatewayPart = joinParts([...Object.values(INPUT_KINDS), { routes: {}, controllers: [], providers: [Inputs] }]);
