import { describe, expect, it } from 'vitest';
import type { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { readConfig } from '@rudder/runtime';
import { WorkerMetrics } from '../metrics/worker-metrics';
import type { AgentDefinition } from './agent-definition';
import { AgentRegistry } from './agents';
import { defaultAgent } from './default-agent';

/** The registry built from `agents` (plain tools only: no provider classes to discover) on an environment of `env`. */
function registry(agents: AgentDefinition[], env: Record<string, string> = {}) {
  const config = readConfig({ KAFKA_BROKERS: '127.0.0.1:9', DATABASE_URL: 'postgres://127.0.0.1:9/none', OPENAI_API_KEY: 'test', ...env });
  const none = {} as never;
  const built = new AgentRegistry({ agents, config }, none as DiscoveryService, none as MetadataScanner, none as Reflector, new WorkerMetrics());
  built.onModuleInit();
  return built;
}

describe('an agent’s history.turns', () => {
  it('defaults to HISTORY_TURNS, and an agent’s own wins', () => {
    expect(registry([defaultAgent]).get(null)?.historyTurns).toBe(100);
    expect(registry([defaultAgent], { HISTORY_TURNS: '7' }).get(null)?.historyTurns).toBe(7);
    expect(registry([{ ...defaultAgent, history: { turns: 0 } }], { HISTORY_TURNS: '7' }).get(null)?.historyTurns).toBe(0);
  });

  it('refuses at start-up what is not a whole number, 0 or more', () => {
    for (const turns of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => registry([{ ...defaultAgent, history: { turns } }]), String(turns)).toThrow(/history\.turns must be a whole number/);
    }
    expect(() => registry([defaultAgent], { HISTORY_TURNS: '-1' })).toThrow();
  });
});
