import { Inject, Injectable } from '@nestjs/common';
import type { InputKind } from '@rudder/contracts';
import { hop } from '@rudder/runtime';
import { receiptIdsOf, receiptOf, type InputOf, type Outcome, type ReceiptAnswers, type ReceiptRefusals } from '@rudder/conversation';
import { Decisions } from './decisions';
import { GatewayError } from '../errors/gateway-error';
import { InputsPublisher } from './inputs-publisher';

/**
 * How the gateway answers one kind of input, beside its receipt (its rules' `receipt` in
 * @rudder/conversation's `INPUT_KINDS`, which says what the worker's decision is): the HTTP answer to it, the
 * error for its refusal, and the 503 when it does not come in time.
 */
export type Write<K extends InputKind, A> = {
  /**
   * What is known of the input before it is sent: its outcome (`seen`, a receipt among the
   * recent events; or the read side's view), answered with nothing sent; `'sent'`: it was sent
   * before and its receipt is on its way, so it is waited for and not sent again; undefined:
   * send it. It may throw, to answer at once (an id reused, a target no longer pending).
   */
  known?(input: InputOf<K>, seen: Outcome<K> | undefined): Promise<Outcome<K> | 'sent' | undefined>;
  /** The answer body of a decision that gave the input what it asked. */
  answered(answer: ReceiptAnswers[K], input: InputOf<K>): A;
  /**
   * The error that answers the worker's refusal — or, rarely, an answer after all: a decision on
   * an approval refused because the call was decided before, by the same decision, answers that.
   */
  refused(refusal: ReceiptRefusals[K], input: InputOf<K>): GatewayError | A | Promise<GatewayError | A>;
  /** The 503 when no receipt came within the decision timeout: what was sent, and how to learn its outcome. */
  late(input: InputOf<K>, seconds: number): GatewayError;
  /** 422 `id_reused` when the id's receipt is another input's (chat and steer, whose ids are the client's). */
  reused?(input: InputOf<K>): GatewayError;
};

/**
 * The gateway's one write path: `submit(input)` sends an input to `agent.inputs` at most once
 * per request and answers its receipt. The wait for the receipt begins before anything is
 * asked or sent, so a decision made meanwhile is not missed; a receipt already among the
 * recent events (a retry racing the companion's lag) means nothing is sent again.
 */
@Injectable()
export class Writes {
  constructor(
    @Inject(InputsPublisher) private readonly publisher: InputsPublisher,
    @Inject(Decisions) private readonly decisions: Decisions,
  ) {}

  async submit<K extends InputKind, A>(input: InputOf<K>, write: Write<K, A>): Promise<A> {
    hop('gateway.submit');
    const receipt = this.decisions.watch(input.conversation, receiptIdsOf(input), (event, live) => receiptOf(input, event, live));
    try {
      const known = await write.known?.(input, receipt.seen);
      if (known === undefined && receipt.seen === undefined) await this.publisher.publish(input);
      const outcome = known !== undefined && known !== 'sent' ? known : await this.decisions.within(receipt.result, (seconds) => write.late(input, seconds));
      hop('gateway.decided');
      return await this.answer(input, write, outcome);
    } finally {
      receipt.cancel();
    }
  }

  private async answer<K extends InputKind, A>(input: InputOf<K>, write: Write<K, A>, outcome: Outcome<K>): Promise<A> {
    if ('answer' in outcome) return write.answered(outcome.answer, input);
    if ('refusal' in outcome) {
      const refused = await write.refused(outcome.refusal, input);
      if (refused instanceof GatewayError) throw refused;
      return refused;
    }
    if ('guardFailed' in outcome) throw this.decisions.guardFailed({ id: input.id, kind: input.type }, outcome.guardFailed);
    throw write.reused?.(input) ?? new GatewayError('id_reused', `input ${input.id} was sent before as another input; use a new id`);
  }
}

/** Who sends an input, under which id, to which conversation. */
export type Sender = { id: string; key: string; subject: string };

/** An input record as the gateway sends it: version 1, sent now. */
export const inputRecord = <K extends InputKind>(
  type: K,
  sender: Sender,
  fields: Omit<InputOf<K>, 'v' | 'type' | 'id' | 'conversation' | 'subject' | 'sentAt'>,
): InputOf<K> =>
  ({ v: 1, type, id: sender.id, conversation: sender.key, subject: sender.subject, ...fields, sentAt: new Date().toISOString() }) as InputOf<K>;
