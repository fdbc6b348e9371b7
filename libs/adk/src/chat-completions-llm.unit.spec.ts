import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FunctionTool, type LlmRequest, type LlmResponse } from '@google/adk';
import { z } from 'zod';
import { reply, startScriptedModel, type ScriptedModel } from '@rudder/scripted-model';
import { ChatCompletionsLlm } from './chat-completions-llm';

let server: ScriptedModel;
beforeAll(async () => {
  server = await startScriptedModel({ script: () => reply.tools([{ id: 'call_a', name: 'search_hotels', arguments: { city: 'Lisbon' } }], { content: 'Looking.' }) });
});
afterAll(() => server.stop());

async function ask(stream: boolean): Promise<LlmResponse[]> {
  const tool = new FunctionTool({ name: 'search_hotels', description: 'Hotels in a city', parameters: z.object({ city: z.string() }), execute: () => 'none' });
  const request: LlmRequest = {
    contents: [{ role: 'user', parts: [{ text: 'a hotel in Lisbon' }] }],
    config: { systemInstruction: 'You plan trips.', tools: [{ functionDeclarations: [tool._getDeclaration()!] }] },
    liveConnectConfig: {},
    toolsDict: {},
  };
  const responses: LlmResponse[] = [];
  for await (const response of new ChatCompletionsLlm({ baseURL: server.url, apiKey: 'test', model: 'scripted' }).generateContentAsync(request, stream)) responses.push(response);
  return responses;
}

describe('the Chat Completions model for ADK', () => {
  for (const stream of [false, true]) {
    it(`answers ${stream ? 'streaming' : 'at once'} with ADK's model Content: its text, its function calls with their ids, its usage`, async () => {
      const responses = await ask(stream);
      expect(responses.at(-1)).toMatchObject({
        content: { role: 'model', parts: [{ text: 'Looking.' }, { functionCall: { id: 'call_a', name: 'search_hotels', args: { city: 'Lisbon' } } }] },
        usageMetadata: { promptTokenCount: expect.any(Number), totalTokenCount: expect.any(Number) },
      });
      if (stream) expect(responses.filter((r) => r.partial).map((r) => r.content?.parts?.[0].text).join('')).toBe('Looking.');
      const sent = server.requests.at(-1)!.body;
      expect(sent.messages).toEqual([
        { role: 'system', content: 'You plan trips.' },
        { role: 'user', content: 'a hotel in Lisbon' },
      ]);
      expect(sent.tools?.[0]).toMatchObject({ type: 'function', function: { name: 'search_hotels', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } });
    });
  }
});
