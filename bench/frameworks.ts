import { throughput, type ThroughputLevel } from './throughput';
import type { Infra } from './stack';

/**
 * Benchmark 7: a framework's one-tool turn against Rudder's own loop's. One worker process at a
 * time runs the same one-tool turn (`wait 0`, the demo script's) with its agent written in
 * Rudder's own loop, or with a framework through its adapter (bench/framework-workers/); the same
 * closed loop as benchmark 5 measures turns/s and the worker's CPU per turn.
 */
export const FRAMEWORK_WORKERS: { name: string; entry?: string }[] = [
  { name: "Rudder's own loop" },
  { name: 'AI SDK (`ai` 6, ToolLoopAgent)', entry: 'bench/framework-workers/ai-sdk.ts' },
  { name: 'OpenAI Agents (`@openai/agents` 0.14, Agent)', entry: 'bench/framework-workers/openai-agents.ts' },
  { name: 'LangGraph (`langchain` 1.5 createAgent)', entry: 'bench/framework-workers/langgraph.ts' },
  { name: 'Google ADK (`@google/adk` 2.0, LlmAgent)', entry: 'bench/framework-workers/adk.ts' },
];

export type FrameworkLevel = { name: string; level: ThroughputLevel };

export async function frameworks(infra: Infra, options: { conversations: number; seconds: number }): Promise<FrameworkLevel[]> {
  const results: FrameworkLevel[] = [];
  for (const { name, entry } of FRAMEWORK_WORKERS) {
    const [level] = await throughput(infra, { workers: [1], ...options, workerEntry: entry });
    results.push({ name, level });
  }
  return results;
}
