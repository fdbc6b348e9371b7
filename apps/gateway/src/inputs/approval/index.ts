import type { GatewayPart } from '../../http/route';
import { ApprovalController } from './approval.controller';
import { ApprovalHandler } from './approval-handler';
import { APPROVAL_ROUTES } from './approval.routes';

/** The approval input kind: its routes, controller and handler. */
export const APPROVAL: GatewayPart = { routes: APPROVAL_ROUTES, controllers: [ApprovalController], providers: [ApprovalHandler] };
