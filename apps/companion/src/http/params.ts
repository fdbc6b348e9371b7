import { ApprovalId, ConversationKey, FOLLOWUPS_DEFAULT, FOLLOWUPS_MAX, InputId } from '@rudder/contracts';
import { z } from 'zod';
import { parseCursor, type TranscriptCursor } from '../queries/transcript-page';
import { CompanionError } from './errors';

/** Path and query parameters, checked at the edge; a bad one is a 400 naming it. */

const wholeNumber = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,16}$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

const TranscriptQuery = z.object({
  after: z
    .string()
    .transform((text, ctx): TranscriptCursor => {
      const cursor = parseCursor(text);
      if (cursor === null) {
        ctx.addIssue({ code: 'custom', message: 'after must be a cursor from a previous page' });
        return z.NEVER;
      }
      return cursor;
    })
    .optional(),
  limit: wholeNumber('limit', 1, 200).default(50),
  /** `rolledBack`: the rows of rolled-back turns too. */
  include: z.literal('rolledBack', { error: 'include may only be rolledBack' }).optional(),
});

const EventsQuery = z.object({
  after: wholeNumber('after', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER).optional(),
  limit: wholeNumber('limit', 1, 1000).default(500),
});

const TurnsQuery = z.object({ input: InputId });

const FollowupsQuery = z.object({ n: wholeNumber('n', 1, FOLLOWUPS_MAX).default(FOLLOWUPS_DEFAULT) });

const TurnId = z.string().min(1, 'a turn id has 1 to 200 characters').max(200, 'a turn id has 1 to 200 characters');

function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues
    .map((i) => {
      const name = i.path.join('.');
      return name === '' || i.message.startsWith(name) ? i.message : `${name}: ${i.message}`;
    })
    .join('; ');
  throw new CompanionError('bad_request', `bad ${what}: ${problems}`);
}

/** Express has already decoded the path segment (`user-42%2Ftrip` is `user-42/trip`). */
export const conversationKey = (value: unknown): string => check(ConversationKey, value, 'conversation key');
export const inputId = (value: unknown): string => check(InputId, value, 'input id');
export const turnId = (value: unknown): string => check(TurnId, value, 'turn id');
export const approvalId = (value: unknown): string => check(ApprovalId, value, 'approval id');
export const transcriptQuery = (query: unknown) => check(TranscriptQuery, query, 'query');
export const eventsQuery = (query: unknown) => check(EventsQuery, query, 'query');
export const turnsQuery = (query: unknown) => check(TurnsQuery, query, 'query');
export const followupsQuery = (query: unknown) => check(FollowupsQuery, query, 'query');
