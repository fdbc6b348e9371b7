import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FunctionTool, LlmAgent } from '@google/adk';
import { z } from 'zod';
import { adkAgent, ChatCompletionsLlm } from '@rudder/adk';
import { closeOnSignals, createLog, nestLogger } from '@rudder/runtime';
import { TurnWorkerModule, turnWorkerTransport } from '@rudder/turn-worker';

/** A worker whose one agent is an ADK `LlmAgent` with the demo's `wait` tool: benchmark 7's ADK side. */
const wait = new FunctionTool({
  name: 'wait',
  description: 'Waits the given number of milliseconds, then answers how long it waited.',
  parameters: z.object({ ms: z.number().int().min(0).max(600_000) }),
  execute: async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return `waited ${ms} ms`;
  },
});
const agent = new LlmAgent({ name: 'assistant', instruction: 'You are a helpful assistant.', model: new ChatCompletionsLlm(), tools: [wait] });

@Module({ imports: [TurnWorkerModule.forRoot({ agents: [adkAgent({ name: 'default', agent })] })] })
class BenchModule {}

const log = createLog('bench-adk');
const app = await NestFactory.createMicroservice(BenchModule, { strategy: turnWorkerTransport(undefined, log), logger: nestLogger(log) });
await app.listen();
closeOnSignals(() => app.close(), log);
