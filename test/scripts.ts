import { lastMessage, lastUserText, reply, toolResults, userTexts, type ModelRequest, type Script } from '@rudder/scripted-model';

/**
 * The model the system tests talk to. It reads the last user message: `wait <ms>` calls the
 * wait tool (and answers after the result), `slow <ms>` answers after that long, `fail <ms>`
 * answers HTTP 500 after that long, anything else is answered `answer to <text>`. After a
 * tool result it answers `after <results>: <text>`.
 */
export const testScript: Script = (request) => {
  const text = lastUserText(request);
  const results = toolResults(request);
  if (lastMessage(request)?.role === 'tool') return reply.text(`after ${results.map((r) => r.content).join(', ')}: ${text}`);
  const wait = /wait (\d+)/.exec(text);
  if (wait) return reply.tools([{ name: 'wait', arguments: { ms: Number(wait[1]) } }], { content: `waiting for ${text}` });
  const fail = /fail (\d+)/.exec(text);
  if (fail) return reply.error(500, 'the scripted model fails on purpose', { delayMs: Number(fail[1]) });
  const slow = /slow (\d+)/.exec(text);
  if (slow) return reply.text(`answer to ${text}`, { delayMs: Number(slow[1]) });
  return reply.text(`answer to ${text}`);
};

/** The requests whose last user message is `text`: how often the model was asked about it. */
export const requestsAbout = (requests: readonly ModelRequest[], text: string) =>
  requests.filter((r) => lastUserText(r) === text);

/** The requests that hold a user message `text` anywhere. */
export const requestsWith = (requests: readonly ModelRequest[], text: string) =>
  requests.filter((r) => userTexts(r).includes(text));
