import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createOpenAI } from '@ai-sdk/openai';
import { tool, ToolLoopAgent } from 'ai';
import { z } from 'zod';
import { aiSdkAgent } from '@rudder/ai-sdk';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { TurnWorkerModule, turnWorkerTransport } from '@rudder/turn-worker';

/** A worker whose one agent is an AI SDK `ToolLoopAgent` with the demo's `wait` tool: benchmark 7's AI SDK side. */
const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
const agent = new ToolLoopAgent({
  model: openai.chat(process.env.OPENAI_MODEL ?? 'scripted'),
  instructions: 'You are a helpful assistant.',
  tools: {
    wait: tool({
      description: 'Waits the given number of milliseconds, then answers how long it waited.',
      inputSchema: z.object({ ms: z.number().int().min(0).max(600_000) }),
      execute: async ({ ms }) => {
        await new Promise((resolve) => setTimeout(resolve, ms));
        return `waited ${ms} ms`;
      },
    }),
  },
});

@Module({ imports: [TurnWorkerModule.forRoot({ agents: [aiSdkAgent({ name: 'default', agent })] })] })
class BenchModule {}

const log = createLog('bench-ai-sdk');
const app = await NestFactory.createMicroservice(BenchModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
