import { z } from 'zod';
import { AgentName, ApprovalId, ConversationKey } from './conversation-key';
import { APPROVAL_REASON_MAX } from './inputs/approval';
import { StorableString } from './storable-text';

/**
 * The OpenAI Responses protocol's door (`/v1/responses`, docs/responses.md): the part of its
 * create body Rudder serves, and the shapes it answers. A response is a turn: `model` names
 * the agent, `input` is the user's message(s), `previous_response_id` or `conversation` (a
 * Rudder conversation key) continues a conversation. What a Rudder agent decides for itself
 * (its instructions, its tools) cannot be sent; sampling settings the agent's model owns are
 * accepted and ignored.
 */
const Text = StorableString.trim().min(1, 'text must not be empty');

const InputTextPart = z.object({ type: z.enum(['input_text', 'output_text']), text: Text }).strict();

/** A user message of `input`: a plain string, or parts of text (`input_text`). */
const InputMessage = z
  .object({
    type: z.literal('message').optional(),
    role: z.literal('user', "only the user's messages can be sent: the agent's instructions are its own"),
    content: z.union([Text, z.array(InputTextPart).min(1).max(32)]),
  })
  .strict();

/**
 * A person's answer to an `mcp_approval_request` item of the response a create continues: the
 * same decision as `POST …/approvals/{approval_request_id}` (`approve` true: approve, false: deny,
 * with `reason` for the model).
 */
const ApprovalResponseItem = z
  .object({
    type: z.literal('mcp_approval_response'),
    approval_request_id: ApprovalId,
    approve: z.boolean(),
    reason: StorableString.max(APPROVAL_REASON_MAX).nullish(),
    id: z.string().max(200).nullish(),
  })
  .strict();
export type ApprovalResponseItem = z.infer<typeof ApprovalResponseItem>;

const isApprovalResponse = (item: InputMessage | ApprovalResponseItem): item is ApprovalResponseItem => item.type === 'mcp_approval_response';
type InputMessage = z.infer<typeof InputMessage>;

const Metadata = z.record(z.string().max(64), z.string().max(512)).refine((m) => Object.keys(m).length <= 16, 'metadata holds at most 16 keys');

export const CreateResponseBody = z
  .object({
    model: AgentName.meta({ description: 'The agent that answers: a conversation keeps the agent of its first response until a handoff hands it to another, and a create names the one that answers it now (else 409 agent_mismatch).' }),
    input: z.union([
      Text,
      z
        .array(z.union([InputMessage, ApprovalResponseItem]))
        .min(1, 'input must hold at least one message')
        .max(32)
        // A create either says something (a turn) or answers approval requests (the turn they wait in): not both.
        .refine((items) => items.every(isApprovalResponse) || !items.some(isApprovalResponse), 'input holds messages or mcp_approval_response items, not both'),
    ]),
    previous_response_id: z.string().min(1).max(1000).nullish(),
    conversation: z.union([ConversationKey, z.object({ id: ConversationKey }).strict()]).nullish(),
    stream: z.boolean().nullish(),
    background: z.boolean().nullish(),
    metadata: Metadata.nullish(),
    store: z.literal(true, 'every response is stored (store: false is not served)').nullish(),
    instructions: z.null({ error: "an agent's instructions are its own: send none" }).optional(),
    tools: z.array(z.never({ error: "an agent's tools are its own: send none" })).max(0).nullish(),
    // Settings of the model that the agent's own model client decides: accepted, not used.
    temperature: z.number().nullish(),
    top_p: z.number().nullish(),
    max_output_tokens: z.number().int().nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    tool_choice: z.unknown().optional(),
    // Accepted as the protocol has them and not used (the agent decides), each bounded.
    truncation: z.enum(['auto', 'disabled']).nullish(),
    user: z.string().max(256).optional(),
    safety_identifier: z.string().max(256).nullish(),
    prompt_cache_key: z.string().max(256).nullish(),
    include: z.array(z.string().max(128)).max(16).nullish(),
    stream_options: z.object({}).loose().nullish(),
    text: z.object({}).loose().optional(),
    reasoning: z.object({}).loose().nullish(),
    service_tier: z.string().max(64).nullish(),
  })
  .strict()
  .refine((b) => b.previous_response_id == null || b.conversation == null, {
    message: 'give previous_response_id or conversation, not both',
    path: ['conversation'],
  });
export type CreateResponseBody = z.infer<typeof CreateResponseBody>;

/** The user's texts of a create's `input`, one per message (parts of a message joined by a blank line). */
export function inputTexts(input: CreateResponseBody['input']): string[] {
  if (typeof input === 'string') return [input];
  return input.flatMap((item) => (isApprovalResponse(item) ? [] : [typeof item.content === 'string' ? item.content : item.content.map((part) => part.text).join('\n\n')]));
}

/** The `mcp_approval_response` items of a create's `input`; null when it holds messages. */
export function approvalResponses(input: CreateResponseBody['input']): ApprovalResponseItem[] | null {
  return typeof input !== 'string' && input.every(isApprovalResponse) ? input : null;
}

const QueryIncludes = z.union([z.string().max(128), z.array(z.string().max(128)).max(16)]).optional();

/** `GET /v1/responses/{id}`'s query. */
export const RetrieveResponseQuery = z
  .object({
    stream: z.enum(['true', 'false']).optional(),
    starting_after: z.string().regex(/^\d{1,15}$/, 'a sequence number').optional(),
    // What to add to the answer (nothing the door makes): accepted and ignored, bounded as the
    // create's, in the forms clients send an array in a query (`include[]=…`, the `openai`
    // client's; `include=…`, repeated or not).
    include: QueryIncludes,
    'include[]': QueryIncludes,
    include_obfuscation: z.enum(['true', 'false']).optional(),
  })
  .strict();

const ProtocolUsage = z.object({
  input_tokens: z.number().int(),
  input_tokens_details: z.object({ cached_tokens: z.number().int() }),
  output_tokens: z.number().int(),
  output_tokens_details: z.object({ reasoning_tokens: z.number().int() }),
  total_tokens: z.number().int(),
});

/** A response as the door answers it (the protocol's `Response`; the fields Rudder fills). */
export const ResponseAnswer = z
  .object({
    id: z.string(),
    object: z.literal('response'),
    created_at: z.number(),
    status: z.enum(['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete']),
    model: z.string(),
    output: z.array(z.object({ type: z.string(), id: z.string() }).loose()),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    usage: ProtocolUsage.nullable(),
    metadata: z.record(z.string(), z.string()),
    previous_response_id: z.string().nullable(),
    conversation: z.object({ id: z.string() }),
    background: z.boolean(),
  })
  .loose()
  .meta({ id: 'Response', description: "The OpenAI Responses protocol's response: one turn of a conversation (docs/responses.md)." });
export type ResponseAnswer = z.infer<typeof ResponseAnswer>;

/** The protocol's error body. */
export const ProtocolErrorAnswer = z
  .object({ error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }) })
  .meta({ id: 'ProtocolError', description: "An error of the Responses door, in the OpenAI protocol's shape." });
export type ProtocolErrorAnswer = z.infer<typeof ProtocolErrorAnswer>;
