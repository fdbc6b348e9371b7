import { Inject, Injectable } from '@nestjs/common';
import type { ForkAnswer, RetractAnswer, StopAnswer } from '@rudder/contracts';
import type { InputOf } from '@rudder/conversation';
import type { GatewayError } from '../errors/gateway-error';
import { Writes } from '../writes/submit';
import { ChatHandler } from './chat/chat';
import { ForkHandler } from './fork/fork';
import { RetractHandler, type RetractRequest } from './retract/retract';
import { SteerHandler } from './steer/steer';
import { StopHandler, type StopRequest } from './stop/stop';

/**
 * The input kinds as another door submits them (the Responses door): each by its kind's own
 * rules, through the one write path. The door builds its records itself (fields of its own,
 * such as `continues` or `derivedFrom`), but never reaches into a kind's handler.
 */
@Injectable()
export class Inputs {
  constructor(
    @Inject(ChatHandler) private readonly chat: ChatHandler,
    @Inject(SteerHandler) private readonly steer: SteerHandler,
    @Inject(StopHandler) private readonly stops: StopHandler,
    @Inject(RetractHandler) private readonly retracts: RetractHandler,
    @Inject(ForkHandler) private readonly forks: ForkHandler,
    @Inject(Writes) private readonly writes: Writes,
  ) {}

  /**
   * Submits a chat or a steer by its kind's rules (`ChatHandler.write`, `SteerHandler.write`:
   * the same id again, `idFromClient`, is the same input, answered as before and sent once);
   * `late` is the error when no decision comes within the decision timeout.
   */
  async message(input: InputOf<'chat'> | InputOf<'steer'>, idFromClient: boolean, late: () => GatewayError): Promise<void> {
    if (input.type === 'steer') await this.writes.submit(input, { ...this.steer.write(idFromClient), late });
    else await this.writes.submit(input, { ...this.chat.write(idFromClient), late });
  }

  /** A stop, as `POST …/stop` makes it. */
  stop(request: StopRequest): Promise<StopAnswer> {
    return this.stops.stop(request);
  }

  /** A fork, by the fork's rules (`ForkHandler.submit`); the door builds its record (`derivedFrom`). */
  fork(input: InputOf<'fork'>): Promise<ForkAnswer> {
    return this.forks.submit(input);
  }

  /** A retraction, as `DELETE …/inputs/{id}` makes it. */
  retract(request: RetractRequest): Promise<RetractAnswer> {
    return this.retracts.retract(request);
  }
}
