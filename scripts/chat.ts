/**
 * `npm run chat -- <conversation key>`: a terminal chat. Each typed line is a chat; the
 * answer streams in from the conversation's event stream. GATEWAY_URL (default
 * http://127.0.0.1:$GATEWAY_PORT or :3000) and RUDDER_TOKEN (a bearer token) configure it.
 */
import { createInterface } from 'node:readline/promises';
import { ConversationKey } from '@rudder/contracts';

const key = process.argv[2];
const parsedKey = ConversationKey.safeParse(key);
if (!parsedKey.success) {
  process.stderr.write(`usage: npm run chat -- <conversation key>  (${parsedKey.error.issues[0].message})\n`);
  process.exit(2);
}
const gateway = process.env.GATEWAY_URL ?? `http://127.0.0.1:${process.env.GATEWAY_PORT ?? 3000}`;
const auth: Record<string, string> = process.env.RUDDER_TOKEN ? { authorization: `Bearer ${process.env.RUDDER_TOKEN}` } : {};
const base = `${gateway}/v1/conversations/${encodeURIComponent(key!)}`;
const out = (text: string) => process.stdout.write(text);

const terminal = createInterface({ input: process.stdin, output: process.stdout });
const prompt = () => terminal.setPrompt('you> ');

/** Follows the conversation's events and prints the agent's side of it. */
async function follow(signal: AbortSignal) {
  for (;;) {
    try {
      const response = await fetch(`${base}/events`, { headers: auth, signal });
      if (!response.ok || !response.body) throw new Error(`event stream: HTTP ${response.status}`);
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          show(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      out(`\n(${(error as Error).message}; reconnecting)\n`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function show(block: string) {
  const event = /^event: (.*)$/m.exec(block)?.[1];
  const data = /^data: (.*)$/m.exec(block)?.[1];
  if (!event || !data) return;
  const record = JSON.parse(data);
  switch (event) {
    case 'turn.started':
      out('\nagent> ');
      break;
    case 'token':
      out(record.text);
      break;
    case 'tool.started':
      out(`\n  [${record.data.call.name} ${record.data.call.arguments}] `);
      break;
    case 'tool.ended':
      out(`→ ${record.data.result}\n`);
      break;
    case 'turn.ended':
      out(record.data.status === 'completed' ? '\n' : `\n(turn ${record.data.status}: ${record.data.outcome ?? ''})\n`);
      terminal.prompt(true);
      break;
  }
}

const controller = new AbortController();
void follow(controller.signal);
out(`Chatting on "${key}" through ${gateway}. Type a message and press Enter; Ctrl-D quits.\n`);
prompt();
terminal.prompt();
for await (const line of terminal) {
  const text = line.trim();
  if (text) {
    const response = await fetch(`${base}/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ text }),
    }).catch((error: Error) => ({ ok: false, status: 0, text: async () => error.message }));
    if (response.ok) continue; // the prompt comes back when the turn ends
    out(`(not sent: ${response.status} ${await response.text()})\n`);
  }
  terminal.prompt();
}
controller.abort();
process.exit(0);
