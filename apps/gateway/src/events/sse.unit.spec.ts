import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LAG_GRACE_MS, responseSink, type StreamBufferCap } from './sse';

/** A server whose one response is handed to the test, and a client that sends the request and never reads. */
async function nonReadingClient(): Promise<{ response: ServerResponse; client: Socket; server: Server }> {
  let handed!: (response: ServerResponse) => void;
  const got = new Promise<ServerResponse>((resolve) => (handed = resolve));
  const server = createServer((_, response) => handed(response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.pause();
  client.on('error', () => undefined);
  client.write('GET /events HTTP/1.1\r\nhost: test\r\n\r\n');
  return { response: await got, client, server };
}

const nextTick = () => new Promise((resolve) => setImmediate(resolve));
const message = `data: ${'x'.repeat(4000)}\n\n`;

const opened: { client: Socket; server: Server }[] = [];
afterEach(async () => {
  for (const { client, server } of opened.splice(0)) {
    client.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('responseSink', () => {
  it('drops the response of a client that stops reading once it holds the cap from earlier turns unsent, and says so once', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 64 * 1024, dropped });
    sink.open();
    await nextTick();
    // A message per turn of the event loop: the kernel takes what it can first; the response holds the rest, up to the cap.
    for (let turns = 0; !response.destroyed && turns < 100_000; turns += 1) {
      sink.write(message);
      expect(response.writableLength).toBeLessThanOrEqual(64 * 1024 + message.length);
      await nextTick();
    }
    expect(response.destroyed).toBe(true);
    expect(dropped).toHaveBeenCalledOnce();
    expect(dropped.mock.calls[0][0]).toBeGreaterThan(64 * 1024);
    sink.write(message);
    sink.end();
    expect(dropped).toHaveBeenCalledOnce();
    await sink.drained();
  });

  it('does not hold what one turn writes against the client (a message larger than the cap, a batch); what is left of it on the next turn is', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 1024, dropped });
    sink.open();
    await nextTick();
    sink.write(`data: ${'y'.repeat(10 * 1024 * 1024)}\n\n`);
    for (let i = 0; i < 100; i += 1) sink.write(message);
    expect(response.destroyed).toBe(false);
    await nextTick();
    sink.write(message);
    expect(response.destroyed).toBe(true);
    expect(dropped).toHaveBeenCalledOnce();
  });

  it('does not cap the burst of the turn the stream opens (a replay), only what comes beyond what is left of it', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 64 * 1024, dropped });
    sink.open();
    for (let i = 0; i < 4096; i += 1) sink.write(message);
    await nextTick();
    const backlog = response.writableLength;
    expect(backlog).toBeGreaterThan(2 * 1024 * 1024);
    while (!response.destroyed) {
      sink.write(message);
      expect(response.writableLength).toBeLessThanOrEqual(backlog + 64 * 1024 + message.length);
      await nextTick();
    }
    expect(dropped).toHaveBeenCalledOnce();
  });

  it('drops a response a turn left past the cap when no write follows, LAG_GRACE_MS later', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 64 * 1024, dropped });
    sink.open();
    await nextTick();
    for (let i = 0; i < 2048; i += 1) sink.write(message);
    await nextTick();
    expect(response.destroyed).toBe(false);
    await vi.waitFor(() => expect(dropped).toHaveBeenCalledOnce(), { timeout: LAG_GRACE_MS * 3 });
    expect(response.destroyed).toBe(true);
  });
});
