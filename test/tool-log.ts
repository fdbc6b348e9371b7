import { existsSync, readFileSync } from 'node:fs';

/**
 * The lines the test worker app's tools wrote to TOOL_LOG (test/agents/worker.ts): one JSON
 * object per run of a tool, across every worker process of a stack. "Runs once" is counted here.
 */
export function toolRuns(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
