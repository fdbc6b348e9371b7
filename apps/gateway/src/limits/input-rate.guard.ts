import { Injectable } from '@nestjs/common';
import { SubjectRateGuard } from './subject-rate.guard';

/** Counts every request to a route that produces an input (chat, steer, stop, retract, promote…) against its subject's input rate. */
@Injectable()
export class InputRateGuard extends SubjectRateGuard {
  protected take(subject: string): void {
    this.limits.takeInput(subject);
  }
}
