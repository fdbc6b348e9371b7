import { lastUserText, reply, toolResults, type ModelRequest, type Script } from '@rudder/scripted-model';

/**
 * The model the system tests talk to. It reads the last user message: `wait <ms>` calls the
 * wait tool (and answers after the result), anything else is answered `answer to <text>`.
 */
export const testScript: Script = (request) => {
  const text = lastUserText(request);
  const results = toolResults(request);
  if (results.length > 0) return reply.text(`after ${results.map((r) => r.content).join(', ')}: ${text}`);
  const wait = /wait (\d+)/.exec(text);
  if (wait) return reply.tools([{ name: 'wait', arguments: { ms: Number(wait[1]) } }], { content: `waiting for ${text}` });
  return reply.text(`answer to ${text}`);
};

/** The requests whose last user message is `text`: how often the model was asked about it. */
export const requestsAbout = (requests: readonly ModelRequest[], text: string) =>
  requests.filter((r) => lastUserText(r) === text);
