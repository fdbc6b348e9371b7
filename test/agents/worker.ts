/**
 * A turn worker with the test suite's own agents, as a team would write one (started by
 * test/agents.e2e.spec.ts as its own process):
 * - `default`: the `wait` tool, and `record`, which appends its context to TOOL_LOG and waits
 *   `ms` (the crash tests see every run of a call there);
 * - `quiet`: the same tools, and its turns take no steered messages.
 */
import 'reflect-metadata';
import { appendFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog } from '@rudder/runtime';
import { z } from 'zod';
import { AgentTool, defaultAgent, turnWorkerTransport, TurnWorkerModule, type AgentDefinition, type ToolContext } from '@rudder/turn-worker';

/** Where `record` writes: a service the tools provider injects, as a team's repository would be. */
@Injectable()
class ToolLog {
  readonly path = process.env.TOOL_LOG ?? '/dev/null';
  write(line: unknown) {
    return appendFile(this.path, `${JSON.stringify(line)}\n`);
  }
}

@Injectable()
class RecordingTools {
  constructor(@Inject(ToolLog) private readonly log: ToolLog) {}

  @AgentTool({ name: 'record', description: 'Records that it ran, then waits ms milliseconds.', parameters: z.object({ ms: z.number().int().min(0) }) })
  async record({ ms }: { ms: number }, { conversation, turn, callId, subject, signal }: ToolContext): Promise<string> {
    await this.log.write({ conversation, turn, callId, subject, pid: process.pid });
    await sleep(ms, undefined, { signal });
    return `recorded ${callId}`;
  }
}

const tools: AgentDefinition['tools'] = [...(defaultAgent.tools ?? []), RecordingTools];
const agents: AgentDefinition[] = [
  { ...defaultAgent, tools },
  { ...defaultAgent, name: 'quiet', tools, steering: { maxTaken: 0 } },
];

@Module({ imports: [TurnWorkerModule.forRoot({ agents })], providers: [ToolLog, RecordingTools] })
class TestWorkerModule {}

const app = await NestFactory.createMicroservice(TestWorkerModule, { strategy: turnWorkerTransport(), logger: ['error', 'warn'] });
await app.listen();
closeOnSignals(() => app.close(), createLog('turn-worker'));
