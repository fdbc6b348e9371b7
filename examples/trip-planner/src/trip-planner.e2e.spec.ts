import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { lastMessage, lastUserText, reply, toolResults, userTexts, type Script } from '@rudder/scripted-model';
import { RudderError } from '@rudder/client';
import { answered, started, WAIT, startStack, type Stack } from '../../../test/stack';
import { forecast } from './weather';

/**
 * The example app end to end: its worker process (src/main.ts) runs the trip planner, whose
 * search tool asks the Hotels service, which asks HOTELS_URL — a server here that holds the
 * search open until the test lets it go, so "a steer sent during the tool call" is true by
 * construction. Its `forecast` tool comes from an MCP server over stdio (weather-server.ts),
 * which the worker starts.
 */
const script: Script = (request) => {
  if (lastMessage(request)?.role === 'tool') {
    return reply.text(`found: ${toolResults(request).map((r) => r.content).join('; ')} (asked: ${userTexts(request).join(' / ')})`);
  }
  const weather = /weather in (\w+)/.exec(lastUserText(request));
  if (weather) return reply.tools([{ name: 'forecast', arguments: { city: weather[1], days: 2 } }], { content: 'Let me check.' });
  const city = /hotel in (\w+)/.exec(lastUserText(request));
  if (city) return reply.tools([{ name: 'search_hotels', arguments: { city: city[1] } }], { content: 'Let me look.' });
  return reply.text(`noted: ${lastUserText(request)}`);
};

let stack: Stack;
let rates: Server;
const held: (() => void)[] = [];
beforeAll(async () => {
  rates = createServer((request, response) => {
    held.push(() => response.end(JSON.stringify([{ id: 'lis-2', name: 'Alfama Rooms', city: 'Lisbon', pricePerNight: 85 }])));
  });
  await new Promise<void>((resolve) => rates.listen(0, '127.0.0.1', resolve));
  const hotelsUrl = `http://127.0.0.1:${(rates.address() as AddressInfo).port}/rates`;
  stack = await startStack({ script, workerEntry: 'examples/trip-planner/src/main.ts', workerEnv: { HOTELS_URL: hotelsUrl } });
});
afterAll(async () => {
  for (const release of held) release();
  await stack?.stop();
  rates?.close();
});

describe('the trip planner example', () => {
  it('a steer sent while its search tool runs lands, is in the next model request after the result, and the turn shows agent, usage and steered', async () => {
    const { client, http, model } = stack;
    const conversation = `trips/lisbon-${Date.now()}`;
    expect((await http.post(conversation, '/chat', { text: 'find me a hotel in Lisbon', id: 'c1', agent: 'trip-planner' })).status).toBe(202);
    await vi.waitFor(() => expect(held.length, 'the search waiting on the rates server').toBeGreaterThan(0), WAIT);

    const steer = await client.steer(conversation, { text: 'only under 100 EUR', id: 's1' });
    const turn = (await started(client, conversation, 'c1')).id;
    expect(steer).toEqual({ id: 's1', turn, landed: true });
    held.shift()!();

    const ended = await answered(client, conversation, 'c1');
    expect(ended).toMatchObject({ agent: 'trip-planner', status: 'completed', steered: [{ id: 's1', text: 'only under 100 EUR' }] });
    expect(ended.usage?.totalTokens).toBeGreaterThan(0);
    const next = model.requests.filter((r) => userTexts(r).includes('only under 100 EUR'));
    expect(next).toHaveLength(1);
    expect(next[0].body.messages.slice(-2)).toMatchObject([
      { role: 'tool', content: 'lis-2: Alfama Rooms, 85 EUR a night' },
      { role: 'user', content: 'only under 100 EUR' },
    ]);
    expect(next[0].body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining(`conversation ${conversation}`) });
  });

  it("its guard refuses a steer holding a card number with 422 and the guard's reason; the model never sees it", async () => {
    const { client, model } = stack;
    const conversation = `trips/card-${Date.now()}`;
    await client.chat(conversation, { text: 'hello', id: 'h1', agent: 'trip-planner' });
    await answered(client, conversation, 'h1');
    const refused = client.steer(conversation, { text: 'my card is 4111111111111111', id: 's2' });
    await expect(refused).rejects.toBeInstanceOf(RudderError);
    await expect(refused).rejects.toMatchObject({ status: 422, code: 'refused', message: expect.stringContaining('card numbers are not taken in chat') });
    expect(await client.status(conversation)).toMatchObject({ queue: [], steering: [], lastInputId: 'h1' });
    expect(model.requests.some((r) => JSON.stringify(r.body).includes('4111111111111111'))).toBe(false);
  });

  it('its forecast tool comes from its MCP server over stdio: offered with the schema the server lists, and answered by it', async () => {
    const { client, model } = stack;
    const conversation = `trips/weather-${Date.now()}`;
    await client.chat(conversation, { text: 'what is the weather in Porto', id: 'w1', agent: 'trip-planner' });
    const ended = await answered(client, conversation, 'w1');
    const result = `Porto:\n${forecast('Porto', 2).join('\n')}`;
    expect(ended).toMatchObject({ status: 'completed', content: `Let me check.\n\nfound: ${result} (asked: what is the weather in Porto)` });
    const asked = model.requests.find((r) => userTexts(r).includes('what is the weather in Porto'))!;
    expect(asked.body.tools?.find((t) => t.type === 'function' && t.function.name === 'forecast')).toMatchObject({
      function: { description: 'The weather forecast of a city for the next days.', parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', maximum: 7 } }, required: ['city'] } },
    });
  });
});
