/**
 * A caller of the gateway, as the team's backend would be (`node dist/ask.js <conversation>
 * <text> <steer> [agent]`, RUDDER_URL the gateway): a chat, then a steer once its tool runs. Prints
 * one JSON line for each answer: `{chat}`, `{steer}`, then `{ended}` with the turn's end.
 */
import { RudderClient } from '@rudder/client';

const [key, text, steer, agent] = process.argv.slice(2);
const rudder = new RudderClient({ baseUrl: process.env.RUDDER_URL ?? 'http://127.0.0.1:3000' });
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

say({ chat: await rudder.chat(key, { text, id: 'chat', ...(agent ? { agent } : {}) }) });
for await (const event of rudder.events(key, { after: 0 })) {
  if (event.type === 'tool.started') say({ steer: await rudder.steer(key, { text: steer, id: 'steer' }) });
  if (event.type === 'turn.ended') {
    say({ ended: event.data });
    break;
  }
}
