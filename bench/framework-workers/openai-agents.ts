import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Agent, OpenAIChatCompletionsModel, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { openAiAgentsAgent } from '@rudder/openai-agents';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { TurnWorkerModule, turnWorkerTransport } from '@rudder/turn-worker';

/** A worker whose one agent is an OpenAI Agents SDK `Agent` with the demo's `wait` tool: benchmark 7's OpenAI Agents side. */
const wait = tool({
  name: 'wait',
  description: 'Waits the given number of milliseconds, then answers how long it waited.',
  parameters: z.object({ ms: z.number().int().min(0).max(600_000) }),
  execute: async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `waited ${ms} ms`;
  },
});
const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const agent = new Agent({ name: 'assistant', instructions: 'You are a helpful assistant.', model: new OpenAIChatCompletionsModel(client, process.env.OPENAI_MODEL ?? 'scripted'), tools: [wait] });

@Module({ imports: [TurnWorkerModule.forRoot({ agents: [openAiAgentsAgent({ name: 'default', agent })] })] })
class BenchModule {}

const log = createLog('bench-openai-agents');
const app = await NestFactory.createMicroservice(BenchModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
