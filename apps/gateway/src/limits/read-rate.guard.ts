import { Injectable } from '@nestjs/common';
import { SubjectRateGuard } from './subject-rate.guard';

/**
 * Counts every read of a conversation (a `GET` of a `{key}` route: status, transcript, turns,
 * the event stream; a response of the Responses door, `GET /v1/responses/{id}`) against its
 * subject's read rate, before the handler validates anything or asks the companion. `@Route`
 * puts it on those routes (`readsConversation`, http/route.ts).
 */
@Injectable()
export class ReadRateGuard extends SubjectRateGuard {
  protected take(subject: string): void {
    this.limits.takeRead(subject);
  }
}
