import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readEvents } from './sse';
import { answered, WAIT, startStack, type Stack } from './stack';
import { metricsUrlOf, sample, scrape } from './prometheus';
import { testScript } from './scripts';

/**
 * Fencing: a worker paused (SIGSTOP) past its session timeout loses its partitions; when it
 * wakes it must fail to commit anything — the new owner took a newer epoch — and the input is
 * still answered exactly once.
 */
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ script: testScript, workers: 0 });
});
afterAll(() => stack?.stop());

describe('a zombie worker', () => {
  it('paused past its session timeout, it commits nothing when it wakes; the new owner answers the input once', async () => {
    const { client, http } = stack;
    const conversation = `zombie/${Date.now()}`;
    const zombie = await stack.startWorker({ PAUSE_AT: 'before-tool-result-stored', METRICS_PORT: '0' });
    await client.chat(conversation, { text: 'wait 300', id: 'z-1' });
    // The zombie ran the tool and stopped itself right before storing the result.
    await vi.waitFor(() => expect(zombie.output()).toContain('pausing at before-tool-result-stored'), WAIT);

    const owner = await stack.startWorker(); // assigned once the zombie's session expired
    const turn = await answered(client, conversation, 'z-1', 60_000);
    expect(turn).toMatchObject({ status: 'completed', content: 'waiting for wait 300\n\nafter waited 300 ms: wait 300' });

    zombie.child.kill('SIGCONT');
    await vi.waitFor(() => expect(zombie.output()).toContain('fenced'), WAIT);
    expect(sample(await scrape(metricsUrlOf(zombie)), 'rudder_fenced_total'), 'the zombie counts its fenced write').toBeGreaterThanOrEqual(1);

    const events = await readEvents(await http.events(conversation, { 'last-event-id': '0' }), (m) => m.event === 'turn.ended');
    const types = events.map((m) => m.event);
    expect(types.filter((t) => t === 'tool.ended')).toHaveLength(1);
    expect(types.filter((t) => t === 'turn.ended')).toHaveLength(1);
    const transcript = (await client.messages(conversation)).items.map((m) => m.text);
    expect(transcript).toEqual(['wait 300', 'waiting for wait 300', 'after waited 300 ms: wait 300']);
    await zombie.kill('SIGKILL');
    await owner.kill('SIGTERM');
  });
});
