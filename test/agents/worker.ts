/**
 * A turn worker with the test suite's own agents, as a team would write one (started by
 * test/agents.e2e.spec.ts as its own process):
 * - `default`: the `wait` tool, and `record`, which appends its context to TOOL_LOG and waits
 *   `ms` (the crash tests see every run of a call there);
 *   `hold`, which waits at a gate of the scripted model (`POST /gates/{gate}/pass`) until the
 *   test opens it: a tool call held open by construction, not for a time;
 * - `quiet`: the same tools, and its turns take no steered messages;
 * - `guarded`: the default agent with an input guard that fails on purpose, once per text:
 *   `guard:throw-once:<tag>` throws, `guard:hang-once:<tag>` never answers (its budget,
 *   `guardTimeoutMs` 300, runs out); sent again, the same text passes;
 * - `concierge`: follow-ups and recap prompts and model of its own (`affordances`), which the
 *   companion uses for its conversations;
 * - `budgeted`: a small context budget (`BUDGET_TOKENS`, tool results sent with at most
 *   `BUDGET_TOOL_RESULT_TOKENS`) and the tools `bulk`, which answers `bytes` characters of
 *   text, and `bulk_whole`, the same but sent whole (its own `maxResultTokens`); it never
 *   compacts (`compactAt: null`), and its turns may take 40 steps;
 * - `compacting`: the same budget and tools, compacting its history past `COMPACT_AT_TOKENS`
 *   with its own summary prompt (`SUMMARY_PROMPT`, which the tests' scripts answer);
 * - `checked`: the default agent with an output guard (`checkedAnswers`): an answer that says
 *   `rude` is asked again (`{reask: 'be polite'}`), one that says `forbidden` is blocked
 *   (`{block: 'I cannot help with that.'}`), any other passes;
 * - `approving`: the tools, and three that need a person's approval, each logging its runs to
 *   TOOL_LOG: `send_email` (always), `pay` (over 100 only), `expiring` (denied as timed out
 *   after APPROVAL_TIMEOUT_MS, 3 s by default); `approving-quiet`: the same, taking no steers;
 * - `triage` and `specialist` hand conversations to each other (`handoffs`), each with
 *   instructions that name it (`HANDOFF_INSTRUCTIONS`); `filtering` hands to `specialist` with a
 *   filter that drops every tool output and every earlier turn from the specialist's requests
 *   (test/handoffs.e2e.spec.ts);
 * - `scheduling`: the tools, and the built-in `schedule` tool (`schedules: true`) that makes
 *   schedules of its own conversation (test/schedules.e2e.spec.ts).
 */
import 'reflect-metadata';
import { appendFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { closeOnSignals, createLog } from '@rudder/runtime';
import { z } from 'zod';
import { AgentTool, defaultAgent, turnWorkerTransport, TurnWorkerModule, type AgentDefinition, type ToolContext } from '@rudder/turn-worker';
import { BUDGET_TOKENS, BUDGET_TOOL_RESULT_TOKENS, COMPACT_AT_TOKENS, SUMMARY_PROMPT } from './budget';
import { HANDOFF_INSTRUCTIONS } from './handoffs';

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

@Injectable()
class GateTools {
  /** The scripted model's server, where the gates are: OPENAI_BASE_URL without its /v1. */
  private readonly base = (process.env.OPENAI_BASE_URL ?? '').replace(/\/v1\/?$/, '');

  @AgentTool({ name: 'hold', description: 'Waits until the test opens the named gate.', parameters: z.object({ gate: z.string().min(1) }) })
  async hold({ gate }: { gate: string }, { callId, signal }: ToolContext): Promise<string> {
    const answer = await fetch(`${this.base}/gates/${encodeURIComponent(gate)}/pass`, { method: 'POST', body: callId, signal });
    if (!answer.ok) throw new Error(`the gate ${gate} answered ${answer.status}`);
    return `held at ${gate}`;
  }
}

/** Tools a person approves before they run (docs/agents.md, "Approvals"). */
@Injectable()
class ApprovalTools {
  constructor(@Inject(ToolLog) private readonly log: ToolLog) {}

  @AgentTool({
    name: 'send_email',
    description: 'Sends an email.',
    parameters: z.object({ to: z.string().min(3).includes('@'), body: z.string() }),
    needsApproval: true,
  })
  async sendEmail({ to, body }: { to: string; body: string }, { conversation, turn, callId }: ToolContext): Promise<string> {
    await this.log.write({ tool: 'send_email', conversation, turn, callId, to, body, pid: process.pid });
    return `sent to ${to}: ${body}`;
  }

  @AgentTool({ name: 'pay', description: 'Pays an amount.', parameters: z.object({ amount: z.number().positive() }), needsApproval: ({ amount }) => amount > 100 })
  async pay({ amount }: { amount: number }, { conversation, turn, callId }: ToolContext): Promise<string> {
    await this.log.write({ tool: 'pay', conversation, turn, callId, amount, pid: process.pid });
    return `paid ${amount}`;
  }

  @AgentTool({
    name: 'expiring',
    description: 'Does something a person must approve in time.',
    parameters: z.object({ what: z.string() }),
    needsApproval: true,
    approvalTimeout: Number(process.env.APPROVAL_TIMEOUT_MS ?? 3000),
  })
  async expiring({ what }: { what: string }, { conversation, turn, callId }: ToolContext): Promise<string> {
    await this.log.write({ tool: 'expiring', conversation, turn, callId, what, pid: process.pid });
    return `did ${what}`;
  }
}

/** `bytes` characters of lines of numbers: text that takes many tokens, the same every time. */
const bulkText = (bytes: number) => {
  let text = '';
  for (let i = 0; text.length < bytes; i++) text += `line ${i}: ${(i * 7919) % 100_003} ${(i * 104_729) % 99_991}\n`;
  return text.slice(0, bytes);
};

@Injectable()
class BulkTools {
  @AgentTool({ name: 'bulk', description: 'Answers `bytes` characters of text.', parameters: z.object({ bytes: z.number().int().min(0).max(1_000_000) }) })
  async bulk({ bytes }: { bytes: number }): Promise<string> {
    return bulkText(bytes);
  }

  @AgentTool({ name: 'bulk_whole', description: 'Answers `bytes` characters of text, sent whole.', parameters: z.object({ bytes: z.number().int().min(0).max(1_000_000) }), maxResultTokens: 1_000_000 })
  async bulkWhole({ bytes }: { bytes: number }): Promise<string> {
    return bulkText(bytes);
  }
}

const tools: AgentDefinition['tools'] = [...(defaultAgent.tools ?? []), RecordingTools, GateTools];

/** The texts the `guarded` agent's guard has failed on: each fails once, then passes. */
const failedOnce = new Set<string>();
const failingGuard: AgentDefinition['guard'] = ({ text }) => {
  const failure = /guard:(throw|hang)-once:\S+/.exec(text);
  if (!failure || failedOnce.has(failure[0])) return null;
  failedOnce.add(failure[0]);
  if (failure[1] === 'throw') throw new Error('the moderation service is down (on purpose)');
  // Ignores its signal too: the worst a guard can do.
  return new Promise<never>(() => undefined);
};
/** The `checked` agent's output guard (test/output-guards.e2e.spec.ts). */
const checkedAnswers: AgentDefinition['outputGuard'] = (answer) => {
  if (/\brude\b/.test(answer)) return { reask: 'be polite' };
  if (/\bforbidden\b/.test(answer)) return { block: 'I cannot help with that.' };
  return 'pass';
};
const agents: AgentDefinition[] = [
  { ...defaultAgent, tools },
  { ...defaultAgent, name: 'quiet', tools, steering: { maxTaken: 0 } },
  { ...defaultAgent, name: 'brief', tools, history: { turns: 1 } },
  { ...defaultAgent, name: 'guarded', tools, guard: failingGuard, guardTimeoutMs: 300 },
  {
    ...defaultAgent,
    name: 'concierge',
    tools,
    affordances: {
      followupsPrompt: 'You are the concierge desk: suggest what the guest might ask the concierge next.',
      recapPrompt: 'You are the concierge desk: remind the guest where their request stood.',
      model: 'scripted-affordances',
    },
  },
  // Never compacts: its tests are about what a request leaves out.
  { ...defaultAgent, name: 'budgeted', tools: [...tools, BulkTools], maxSteps: 40, context: { maxTokens: BUDGET_TOKENS, toolResultTokens: BUDGET_TOOL_RESULT_TOKENS, compactAt: null } },
  {
    ...defaultAgent,
    name: 'compacting',
    tools: [...tools, BulkTools],
    context: { maxTokens: BUDGET_TOKENS, toolResultTokens: BUDGET_TOOL_RESULT_TOKENS, compactAt: COMPACT_AT_TOKENS, summaryPrompt: SUMMARY_PROMPT },
  },
  { ...defaultAgent, name: 'checked', tools, outputGuard: checkedAnswers },
  { ...defaultAgent, name: 'approving', tools: [...tools, ApprovalTools] },
  { ...defaultAgent, name: 'approving-quiet', tools: [...tools, ApprovalTools], steering: { maxTaken: 0 } },
  { ...defaultAgent, name: 'triage', instructions: HANDOFF_INSTRUCTIONS.triage, tools, handoffs: [{ agent: 'specialist', description: 'Hands the conversation to the specialist.' }] },
  { ...defaultAgent, name: 'scheduling', tools, schedules: true },
  { ...defaultAgent, name: 'specialist', instructions: HANDOFF_INSTRUCTIONS.specialist, tools, handoffs: ['triage'] },
  {
    ...defaultAgent,
    name: 'filtering',
    instructions: HANDOFF_INSTRUCTIONS.filtering,
    tools,
    handoffs: ['specialist'],
    // Only the running turn's messages, and no tool output at all: the request builder puts each call's back.
    handoffFilter: ({ messages }) => messages.slice(messages.findLastIndex((m) => m.role === 'user' && m.content.startsWith('hand to '))).filter((m) => m.role !== 'tool'),
  },
];

@Module({ imports: [TurnWorkerModule.forRoot({ agents })], providers: [ToolLog, RecordingTools, GateTools, BulkTools, ApprovalTools] })
class TestWorkerModule {}

const app = await NestFactory.createMicroservice(TestWorkerModule, { strategy: turnWorkerTransport(), logger: ['error', 'warn'] });
await app.listen();
closeOnSignals(() => app.close(), createLog('turn-worker'));
