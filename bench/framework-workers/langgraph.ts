import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { langGraphAgent } from '@rudder/langgraph';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { TurnWorkerModule, turnWorkerTransport } from '@rudder/turn-worker';

/** A worker whose one agent is a LangChain `createAgent` (LangGraph) with the demo's `wait` tool: benchmark 7's LangGraph side. */
process.env.LANGSMITH_TRACING = 'false';
process.env.LANGCHAIN_TRACING_V2 = 'false';
const wait = tool(
  async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `waited ${ms} ms`;
  },
  { name: 'wait', description: 'Waits the given number of milliseconds, then answers how long it waited.', schema: z.object({ ms: z.number().int().min(0).max(600_000) }) },
);
const model = new ChatOpenAI({ model: process.env.OPENAI_MODEL ?? 'scripted', apiKey: process.env.OPENAI_API_KEY, configuration: { baseURL: process.env.OPENAI_BASE_URL }, streaming: true });
const agent = createAgent({ model, tools: [wait], systemPrompt: 'You are a helpful assistant.' });

@Module({ imports: [TurnWorkerModule.forRoot({ agents: [langGraphAgent({ name: 'default', agent })] })] })
class BenchModule {}

const log = createLog('bench-langgraph');
const app = await NestFactory.createMicroservice(BenchModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
