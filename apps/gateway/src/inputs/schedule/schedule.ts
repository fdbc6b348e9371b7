import { randomUUID } from 'node:crypto';
import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import {
  inputText,
  SCHEDULE_TEXT_MAX,
  ScheduleBody,
  ScheduleChangeBody,
  ScheduleId,
  ScheduleItem,
  SchedulesAnswer,
  type ScheduleFields,
  type SchedulesAnswer as Schedules,
  type ScheduleItem as Item,
} from '@rudder/contracts';
import { scheduleFieldsOf, scheduleItem, type InputOf, type ScheduleAnswer, type ScheduleRefusal } from '@rudder/conversation';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { checkTextLength, clientIdOf, conversationKeyOf, parseEdge, requireJsonBody } from '../../http/edge';
import { conversation, idempotencyHeaders, json, key, read, readHeaders, write } from '../../http/openapi';
import { route, Route, type GatewayPart, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { inputRecord, Writes, type Write } from '../../writes/submit';

const scheduleParams = z.object({ key, id: ScheduleId });
const FIELDS =
  '`at` (an ISO 8601 time with its offset: fires once, then ends) or `every` (a cron expression of 5 or 6 fields, read in `tz`, an IANA time zone, UTC when absent), `text` or `messages` (sent as a chat of the schedule\'s maker, at most 4000 characters together: 413 `text_too_long` past that), `onBusy` (`enqueue`, the default: a follow-up behind the running turn; `steer`: a steer of the running turn, or a turn of its own when none runs; `skip`: nothing while a turn runs), `unlessUserSpokeSince` (skipped when a person\'s chat or steer was accepted since it was made or last due), `maxLateness` (ms: a firing later than that after its time, because no worker ran, is skipped; absent: however late, marked `late`).';

/**
 * The schedule input kind as the gateway takes it, in one module: its route entries (make,
 * list, change, cancel), its handler (it builds the kind's record and submits it through the one
 * write path, `Writes.submit`), its controller, and the three as one part of the gateway
 * (`SCHEDULE`). The list is read from the companion's status, as the todos are.
 */
export const SCHEDULE_ROUTES = {
  make: route('post', '/v1/conversations/{key}/schedules', 'Make a schedule: a turn at a time, once or by cron', {
    description: `Makes a schedule of the conversation, decided by its worker under the conversation's lock: ${FIELDS} At its time the worker owning the conversation makes its input once — through a crash, a rebalance or a clock's skew — as the subject that made it (refused, once, when that subject can no longer write). The schedule's id is the input's (\`id\` or \`Idempotency-Key\`, at most 160 characters): sent again, it answers the same. 400 for a bad field (an \`at\` more than a minute in the past, a cron expression croner refuses, an unknown time zone); 404 for a conversation nobody has written to; 409 \`conflict\` for an id a schedule has; 409 \`schedules_full\` past 20 schedules. Needs \`write\`.`,
    requestParams: { path: conversation, header: idempotencyHeaders },
    requestBody: { required: true, ...json(ScheduleBody.meta({ id: 'ScheduleBody' })) },
    responses: write(201, 'made: the schedule, with its next time', ScheduleItem, ['conflict', 'not_found', 'schedules_full', 'id_reused', 'text_too_long']),
  }),
  list: route('get', '/v1/conversations/{key}/schedules', "The conversation's schedules", {
    description: "Each with its next time (`next`) and when it last fired (`lastFiredAt`), as of the log position `position`. The stream carries `schedule.made`, `schedule.changed`, `schedule.cancelled`, `schedule.fired` and `schedule.skipped`. Needs `read`.",
    requestParams: { path: conversation, header: readHeaders },
    responses: read('the schedules', SchedulesAnswer, ['not_found']),
  }),
  change: route('patch', '/v1/conversations/{key}/schedules/{id}', 'Change or reschedule a schedule', {
    description: `Changes the fields given (${FIELDS}); \`at\` and \`every\` replace each other. Its next time is computed anew, and the subject that changes it is the one it fires as from then on. The change has an id of its own (\`id\` or \`Idempotency-Key\`). 404 for no such schedule (it ended or was cancelled). Needs \`write\`.`,
    requestParams: { path: scheduleParams, header: idempotencyHeaders },
    requestBody: { required: true, ...json(ScheduleChangeBody.meta({ id: 'ScheduleChangeBody' })) },
    responses: write(200, 'changed: the schedule as it is now', ScheduleItem, ['not_found', 'id_reused', 'text_too_long']),
  }),
  cancel: route('delete', '/v1/conversations/{key}/schedules/{id}', 'Cancel a schedule', {
    description: 'It fires no more (a firing already decided has happened). 404 for no such schedule. The cancel has an id of its own (`Idempotency-Key`). Needs `write`.',
    requestParams: { path: scheduleParams, header: idempotencyHeaders },
    responses: write(200, 'cancelled', z.object({ id: z.string(), cancelled: z.literal(true) }).meta({ id: 'ScheduleCancelled' }), ['not_found']),
  }),
} satisfies Routes;

/** A schedule's make or change as the worker answered it; a cancel's answer. */
type Answer = Item | { id: string; cancelled: true };

export type ScheduleRequest = { key: string; subject: string; body: unknown; idempotencyKey: string | undefined };

/**
 * Makes, changes and cancels schedules: checks the body (400, the field named; an `at` more than a
 * minute in the past and a cron expression croner refuses are 400 here, before anything is sent), write
 * access (403), and submits one `ScheduleInputV1`, answering the worker's decision:
 * `schedule.made` → 201 the schedule; `schedule.changed` → 200; `schedule.cancelled` → 200
 * `{id, cancelled: true}`; `schedule.refused` → 403, 404, 409, 400.
 */
@Injectable()
export class ScheduleHandler {
  private readonly write: Write<'schedule', Answer> = {
    answered: (answer: ScheduleAnswer, input) => (answer.schedule === null ? { id: input.schedule, cancelled: true } : scheduleItem(answer.schedule)),
    refused: (refusal, input) => scheduleRefused(refusal, input),
    late: ({ id, op, schedule }, seconds) =>
      new GatewayError(
        'unavailable',
        `the schedule's ${op} ${id} was sent, but the worker has not decided on it within ${seconds} s; send it again with the same id to get its answer, or read the conversation's schedules`,
        { id, schedule },
      ),
    reused: ({ id }) => new GatewayError('id_reused', `input ${id} was sent before as another input; use a new id`),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  async make(request: ScheduleRequest): Promise<Answer> {
    requireJsonBody(request.body);
    const body = parseEdge(ScheduleBody, request.body, 'schedule body');
    const id = clientIdOf(body.id, request.idempotencyKey);
    if (id !== undefined) parseEdge(ScheduleId, id, 'schedule id');
    const fields = checkedFields(body);
    await this.access.mayWrite(request.key, request.subject);
    const schedule = id ?? randomUUID();
    return this.submit(request, schedule, 'make', schedule, fields);
  }

  async change(request: ScheduleRequest, schedule: string): Promise<Answer> {
    requireJsonBody(request.body);
    const body = parseEdge(ScheduleChangeBody, request.body, 'schedule change body');
    const fields = checkedFields(body);
    await this.access.mayWrite(request.key, request.subject);
    return this.submit(request, clientIdOf(body.id, request.idempotencyKey) ?? randomUUID(), 'change', schedule, fields);
  }

  async cancel(request: ScheduleRequest, schedule: string): Promise<Answer> {
    const id = clientIdOf(undefined, request.idempotencyKey) ?? randomUUID();
    await this.access.mayWrite(request.key, request.subject);
    return this.submit(request, id, 'cancel', schedule, undefined);
  }

  private submit(request: ScheduleRequest, id: string, op: InputOf<'schedule'>['op'], schedule: string, fields: Partial<ScheduleFields> | undefined): Promise<Answer> {
    const sender = { id, key: request.key, subject: request.subject };
    return this.writes.submit(inputRecord('schedule', sender, { op, schedule, ...(fields === undefined ? {} : { fields }) }), this.write);
  }
}

/**
 * The record's fields from a body (`scheduleFieldsOf`), or 400 naming the field that makes none;
 * 413 `text_too_long` for a text past SCHEDULE_TEXT_MAX, as a chat's, a steer's and an edit's.
 */
function checkedFields(body: ScheduleChangeBody): Partial<ScheduleFields> {
  checkTextLength(inputText(body.messages ?? (body.text === undefined ? [] : [body.text])), 'text', SCHEDULE_TEXT_MAX);
  const checked = scheduleFieldsOf(body, new Date());
  if ('fields' in checked) return checked.fields;
  throw new GatewayError('bad_request', `bad schedule body: ${checked.path}: ${checked.message}`, [{ path: checked.path, message: checked.detail }]);
}

/** The worker's refusal: 403, 404, 409 (`conflict`: the id is a schedule's; `schedules_full`), 400 for fields that make no schedule. */
function scheduleRefused({ code, message }: ScheduleRefusal, input: InputOf<'schedule'>): GatewayError {
  const refused = `the schedule's ${input.op} ${input.id} was refused: ${message}`;
  switch (code) {
    case 'forbidden':
      return new GatewayError('forbidden', refused);
    case 'not_found':
      return new GatewayError('not_found', refused, { schedule: input.schedule });
    case 'exists':
      return new GatewayError('conflict', refused, { schedule: input.schedule });
    case 'full':
      return new GatewayError('schedules_full', refused);
    case 'invalid':
      return new GatewayError('bad_request', refused);
    default: {
      const never: never = code;
      return never;
    }
  }
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class ScheduleController {
  constructor(@Inject(ScheduleHandler) private readonly handler: ScheduleHandler) {}

  /** 201 the schedule once the worker has made it. */
  @Route(SCHEDULE_ROUTES.make)
  make(@Param('key') rawKey: string, @Body() body: unknown, @Headers('idempotency-key') idempotencyKey: string | undefined, @Subject() subject: string): Promise<Answer> {
    return this.handler.make({ key: conversationKeyOf(rawKey), subject, body, idempotencyKey });
  }

  /** 200 the schedule as it is now. */
  @Route(SCHEDULE_ROUTES.change)
  change(
    @Param('key') rawKey: string,
    @Param('id') rawId: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<Answer> {
    return this.handler.change({ key: conversationKeyOf(rawKey), subject, body, idempotencyKey }, parseEdge(ScheduleId, rawId, 'schedule id'));
  }

  /** 200 `{id, cancelled: true}`. */
  @Route(SCHEDULE_ROUTES.cancel)
  cancel(@Param('key') rawKey: string, @Param('id') rawId: string, @Headers('idempotency-key') idempotencyKey: string | undefined, @Subject() subject: string): Promise<Answer> {
    return this.handler.cancel({ key: conversationKeyOf(rawKey), subject, body: undefined, idempotencyKey }, parseEdge(ScheduleId, rawId, 'schedule id'));
  }
}

/** The list is a read: no input rate is taken for it. */
@Controller()
@UseGuards(AuthGuard)
export class SchedulesReadController {
  constructor(@Inject(ConversationAccess) private readonly access: ConversationAccess) {}

  /** The conversation's schedules, from the companion's status: the list, the access check and `position` are of one moment. */
  @Route(SCHEDULE_ROUTES.list)
  async list(@Param('key') rawKey: string, @Subject() subject: string): Promise<Schedules> {
    const status = await this.access.readable(conversationKeyOf(rawKey), subject);
    return { items: status.schedules, position: status.position };
  }
}

/** The schedule input kind: its routes, controllers and handler, as one part of the gateway. */
export const SCHEDULE: GatewayPart = { routes: SCHEDULE_ROUTES, controllers: [ScheduleController, SchedulesReadController], providers: [ScheduleHandler] };
