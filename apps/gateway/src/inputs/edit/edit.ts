import { Body, Controller, Headers, Inject, Injectable, Param, UseGuards } from '@nestjs/common';
import { EditBody, EditedAnswer, InputId, type EditAnswer } from '@rudder/contracts';
import type { EditRefusal, InputOf } from '@rudder/conversation';
import type { Config } from '@rudder/runtime';
import { z } from 'zod';
import { AuthGuard, Subject } from '../../auth/auth.guard';
import { CompanionClient } from '../../companion/companion-client';
import { ConversationAccess } from '../../companion/conversation-access';
import { GatewayError } from '../../errors/gateway-error';
import { conversationKeyOf, parseEdge } from '../../http/edge';
import { idempotencyHeaders, json, key, write } from '../../http/openapi';
import { route, Route, type GatewayPart, type Routes } from '../../http/route';
import { InputRateGuard } from '../../limits/input-rate.guard';
import { CONFIG } from '../../tokens';
import { Decisions } from '../../writes/decisions';
import { inputRecord, Writes, type Write } from '../../writes/submit';
import { admitMessage, type MessageBody, type MessageRequest } from '../message';
import { notPending, targetRefused, type TargetWords } from '../target';

/**
 * The edit input kind as the gateway takes it, in one module: its route entry (`EDIT_ROUTES`:
 * it routes the controller and writes the OpenAPI document), its handler (it builds the record
 * and submits it through the one write path, `Writes.submit`, with how its receipt is
 * answered), its controller, and the three as one part of the gateway (`EDIT`).
 */
export const EDIT_ROUTES = {
  edit: route('patch', '/v1/conversations/{key}/inputs/{id}', 'Edit a pending input (a follow-up, or a steer not taken yet)', {
    description:
      "New text for a pending input, in its kind and place: `text` (a steer, or a chat of one message) or `messages` (a chat). Its `revision` goes up by one (0 as sent; the status's `steering` and `queue` show it); `ifRevision` refuses the edit (412) unless the input is at that revision. The edit has an id of its own (`id` or `Idempotency-Key`): sent again, it answers the same; the same id with another input or text is 422. 409 once the input is no longer pending (delivered: taken, or its turn started; taken back, dropped, refused), saying what became of it; 404 when nobody knows it. The new text passes the input checks of a chat: 413 over the text bound, 429 past the bound of what may wait, 422 when the agent's input guard refuses it.",
    requestParams: { path: z.object({ key, id: InputId }), header: idempotencyHeaders },
    requestBody: { required: true, ...json(EditBody.meta({ id: 'EditBody' })) },
    responses: write(200, 'edited: the input as it waits now', EditedAnswer, [
      'conflict',
      'not_found',
      'precondition_failed',
      'text_too_long',
      'id_reused',
      'refused',
      'queue_full',
      'guard_failed',
    ]),
  }),
} satisfies Routes;

/** How its answers speak of it (`target.ts`). */
const EDITING: TargetWords = { verb: 'edit', request: 'edit', does: 'edits', done: 'edited' };

/** An edit's texts: `messages`, or `text` alone, each checked against the text bound as a chat's. */
const EDIT_BODY: MessageBody<EditBody> = {
  schema: EditBody,
  what: 'edit body',
  texts: (body) => (body.messages ?? [body.text ?? '']).map((text, index) => [body.messages === undefined ? 'text' : `messages.${index}`, text] as const),
};

export type EditRequest = MessageRequest & {
  /** Already validated (`InputId`): the pending input to edit. */
  target: string;
};

/**
 * `PATCH /v1/conversations/{key}/inputs/{id}` `{text | messages, id?, ifRevision?}`: checks the
 * body as a chat's (400, 413, the client's id, 403) and submits one `EditInputV1` under the
 * edit's own id, answering the worker's decision on it, made under the conversation's lock so
 * it is serialized with the turn that would take the input: `input.edited` → 200 `{id, kind,
 * text, revision}`; `edit.refused` → 409 when the input is known but no longer pending (saying
 * what became of it) or when the text is not its shape, 404 when nobody knows it, 412 on
 * another revision, 429 past the bounds, 422 when the guard refuses the text.
 *
 * The same edit sent again is answered by its decision while this gateway keeps it (its recent
 * events); an input the companion already shows as no longer pending is 409 at once, nothing produced.
 */
@Injectable()
export class EditHandler {
  private readonly write: Write<'edit', EditAnswer> = {
    known: async (input, seen) => {
      // Decided before, and still among the recent events: answered by that decision.
      if (seen !== undefined) return undefined;
      const known = await this.companion.input(input.conversation, input.target);
      if (known !== null && known.state !== 'pending') throw notPending(EDITING, input.target, known.state);
      return undefined;
    },
    answered: (edited) => edited,
    refused: (refusal, input) => this.refusal(refusal, input),
    late: ({ id, target }, seconds) =>
      new GatewayError(
        'unavailable',
        `the edit ${id} of input ${target} was sent, but the worker has not decided on it within ${seconds} s; ` +
          `send it again with the same id to get its answer, or read the conversation's status (the input's revision says whether it was edited)`,
        { edit: id, target },
      ),
    reused: ({ id }) => new GatewayError('id_reused', `edit ${id} was sent before for another input or with other text; use a new id`),
  };

  constructor(
    @Inject(ConversationAccess) private readonly access: ConversationAccess,
    @Inject(CompanionClient) private readonly companion: CompanionClient,
    @Inject(Writes) private readonly writes: Writes,
    @Inject(Decisions) private readonly decisions: Decisions,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async edit(request: EditRequest): Promise<EditAnswer> {
    const { body, sender } = await admitMessage(request, EDIT_BODY, this.config.MAX_TEXT_CHARS, this.access);
    const input = inputRecord('edit', sender, {
      target: request.target,
      to: body.messages === undefined ? { text: body.text ?? '' } : { messages: body.messages },
      ...(body.ifRevision === undefined ? {} : { ifRevision: body.ifRevision }),
    });
    return this.writes.submit(input, this.write);
  }

  /** The worker's refusal: 403 and 409/404 as a retraction's (`targetRefused`), 412 with the input's revision, 409 for another shape, 429 and 422 as a chat's. */
  private async refusal({ code, message, revision }: EditRefusal, input: InputOf<'edit'>): Promise<GatewayError> {
    switch (code) {
      case 'forbidden':
      case 'not_found':
        return targetRefused(this.companion, EDITING, input.conversation, input.target, code);
      case 'precondition_failed':
        return new GatewayError(
          'precondition_failed',
          `edit ${input.id} was refused: ${message}; read the conversation's status (the input's revision) and edit it again if it still applies, with a new id`,
          { id: input.target, revision },
        );
      case 'shape':
        return new GatewayError('conflict', `edit ${input.id} was refused: ${message}`, { id: input.target });
      case 'queue_full':
      case 'refused':
        return this.decisions.rejected(input.conversation, { id: input.id, kind: 'edit' }, { code, message });
      default: {
        const never: never = code;
        return never;
      }
    }
  }
}

@Controller()
@UseGuards(AuthGuard, InputRateGuard)
export class EditController {
  constructor(@Inject(EditHandler) private readonly handler: EditHandler) {}

  /** 200 `{id, kind, text, revision}` once the worker has edited the pending input; 409 once delivered, 404 when unknown. */
  @Route(EDIT_ROUTES.edit)
  edit(
    @Param('key') rawKey: string,
    @Param('id') rawId: string,
    @Body() body: unknown,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Subject() subject: string,
  ): Promise<EditAnswer> {
    const key = conversationKeyOf(rawKey);
    const target = parseEdge(InputId, rawId, 'input id');
    return this.handler.edit({ key, subject, target, body, idempotencyKey });
  }
}

/** The edit input kind: its route, controller and handler, as one part of the gateway. */
export const EDIT: GatewayPart = { routes: EDIT_ROUTES, controllers: [EditController], providers: [EditHandler] };
