import { lastMessage, lastUserText, reply, toolResults, type Script } from '@rudder/scripted-model';

/**
 * The soak's model (like test/scripts.ts): it reads the last user message. `wait <ms>` calls
 * the wait tool (and answers after its result), `slow <ms>` answers after that long, anything
 * else is answered `answer to <text>` at once. After a tool result: `after <results>: <text>`.
 * Texts name their input (`soak c<conversation> #<n> chat …`), so every answer says what it answers.
 */
export const soakScript: Script = (request) => {
  const text = lastUserText(request);
  if (lastMessage(request)?.role === 'tool') {
    return reply.text(`after ${toolResults(request).map((r) => r.content).join(', ')}: ${text}`);
  }
  const wait = /\bwait (\d+)\b/.exec(text);
  if (wait) return reply.tools([{ name: 'wait', arguments: { ms: Number(wait[1]) } }], { content: `waiting for ${text}` });
  const slow = /\bslow (\d+)\b/.exec(text);
  if (slow) return reply.text(`answer to ${text}`, { delayMs: Number(slow[1]) });
  return reply.text(`answer to ${text}`);
};
