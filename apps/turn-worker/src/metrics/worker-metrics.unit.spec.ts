import { describe, expect, it } from 'vitest';
import { eventVersion, type ConversationEvent, type DomainEvent } from '@rudder/contracts';
import { WorkerMetrics } from './worker-metrics';

let position = 0;
const published = (event: DomainEvent): ConversationEvent =>
  ({ v: eventVersion(event.type), id: `e-${++position}`, conversation: 'c', position, at: '2026-12-01T00:00:00.000Z', ...event }) as ConversationEvent;

/** `rudder_inputs_total` by `kind/decision`. */
async function inputsCounted(metrics: WorkerMetrics): Promise<Record<string, number>> {
  const metric = await metrics.registry.getSingleMetric('rudder_inputs_total')!.get();
  return Object.fromEntries(metric.values.map((v) => [`${v.labels.kind}/${v.labels.decision}`, v.value]));
}

describe('the worker counts each decision on an input', () => {
  it("an input kind's event that answers an input counts as a decision of that kind (accepted, or its refusal's code); one that answers none does not count", async () => {
    const metrics = new WorkerMetrics();
    const pending = { id: 'q', kind: 'chat' as const, text: 'x' };
    metrics.published(
      [
        { type: 'stop.requested', data: { stop: 's', turn: 't', mode: 'stop' } },
        { type: 'stop.refused', data: { stop: 's2', code: 'forbidden' } },
        { type: 'input.discarded', data: { input: pending, stop: 's' } },
        { type: 'input.retracted', data: { input: pending, retract: 'r' } },
        { type: 'retract.refused', data: { retract: 'r2', target: 'q', code: 'not_found' } },
        { type: 'promote.refused', data: { promote: 'p', target: 'q', code: 'not_found' } },
        { type: 'access.granted', data: { grant: 'g', subject: 'bob', access: 'read' } },
        { type: 'grant.refused', data: { grant: 'g2', subject: 'bob', code: 'owner' } },
        {
          type: 'approval.decided',
          data: { turn: 't', step: 0, approval: 'a', callId: 'c', tool: 'x', decision: 'deny', reason: 'timed out', arguments: null, subject: null, input: null },
        },
        { type: 'approval.refused', data: { input: 'd', approval: 'a', code: 'not_awaiting', message: 'm' } },
        { type: 'input.edited', data: { edit: 'e', input: { id: 'q', kind: 'chat', text: 'y', messages: ['y'] }, revision: 1 } },
        { type: 'edit.refused', data: { edit: 'e2', target: 'q', code: 'precondition_failed', message: 'm', digest: '0'.repeat(64), revision: 1 } },
        { type: 'turns.rolledBack', data: { rollback: 'b', asked: { turns: 1 }, turns: ['t'], stopped: null } },
        { type: 'rollback.refused', data: { rollback: 'b2', asked: { turns: 1 }, code: 'busy', message: 'm', running: 't' } },
        { type: 'input.moved', data: { move: 'm', input: 'q', before: null, position: 1 } },
        { type: 'move.refused', data: { move: 'm2', target: 'q', before: 'r', code: 'before', message: 'm' } },
      ].map((event) => published(event as DomainEvent)),
    );
    expect(await inputsCounted(metrics)).toEqual({
      'stop/accepted': 1,
      'stop/forbidden': 1,
      'retract/accepted': 1,
      'retract/not_found': 1,
      'promote/not_found': 1,
      'grant/accepted': 1,
      'grant/owner': 1,
      'approval/not_awaiting': 1,
      'edit/accepted': 1,
      'edit/precondition_failed': 1,
      'rollback/accepted': 1,
      'rollback/busy': 1,
      'move/accepted': 1,
      'move/before': 1,
    });
  });
});
