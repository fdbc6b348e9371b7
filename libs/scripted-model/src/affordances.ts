import { messageText, reply, type ModelRequest, type ScriptedReply } from './script';

/**
 * Rudder's companion asks the model for follow-up suggestions and for a recap beside the turns
 * (apps/companion/src/affordances). Its requests are known by their system prompt, whose last
 * paragraph is always the JSON shape of the answer (`{"suggestions": [...]}` or
 * `{"recap": "..."}`), whatever prompt a deployment configured; the transcript comes as one
 * user message of `User: …` and `Assistant: …` paragraphs.
 */
export type Affordance = 'followups' | 'recap';

/** Which affordance a request asks for; undefined for any other request (an agent's turn). */
export function affordanceAsked(request: Pick<ModelRequest, 'body'>): Affordance | undefined {
  const system = messageText(request.body.messages.find((m) => m.role === 'system'));
  if (system.includes('{"suggestions":')) return 'followups';
  if (system.includes('{"recap":')) return 'recap';
  return undefined;
}

/** The transcript an affordance request shows, oldest first. */
export function affordanceTranscript(request: Pick<ModelRequest, 'body'>): { role: 'user' | 'assistant'; text: string }[] {
  const shown = messageText(request.body.messages.find((m) => m.role === 'user'));
  return shown.split('\n\n').flatMap((paragraph) => {
    const match = /^(User|Assistant): ([\s\S]*)$/.exec(paragraph);
    return match ? [{ role: match[1] === 'User' ? ('user' as const) : ('assistant' as const), text: match[2] }] : [];
  });
}

/**
 * A deterministic answer in the shape asked for, made from the transcript: five suggestions
 * about the last user message, or a recap naming it and the last answer.
 */
export function affordanceReply(asked: Affordance, request: Pick<ModelRequest, 'body'>): ScriptedReply {
  const transcript = affordanceTranscript(request);
  const said = short(transcript.filter((m) => m.role === 'user').at(-1)?.text ?? 'this', 60);
  if (asked === 'followups') {
    return reply.text(
      JSON.stringify({
        suggestions: [`Tell me more about ${said}`, `What should I do next about ${said}?`, 'Can you give me an example?', 'Summarize what we decided', 'Thanks, that helps'],
      }),
    );
  }
  const answered = short(transcript.filter((m) => m.role === 'assistant').at(-1)?.text ?? '', 80);
  return reply.text(JSON.stringify({ recap: `You were asking about "${said}". The last answer was "${answered}". Nothing else was left open.` }));
}

const short = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
