import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { responseSink, type StreamBufferCap } from './sse';

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

const opened: { client: Socket; server: Server }[] = [];
afterEach(async () => {
  for (const { client, server } of opened.splice(0)) {
    client.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('responseSink', () => {
  it('drops the response of a client that stops reading once it holds the cap unsent, and says so once', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 64 * 1024, dropped });
    sink.open();
    const message = `data: ${'x'.repeat(1000)}\n\n`;
    let written = 0;
    // The kernel takes what it can first; the response holds the rest, up to the cap.
    while (!response.destroyed && written < 64 * 1024 * 1024) {
      sink.write(message);
      written += message.length;
      expect(response.writableLength).toBeLessThanOrEqual(64 * 1024 + message.length);
    }
    expect(response.destroyed).toBe(true);
    expect(dropped).toHaveBeenCalledOnce();
    expect(dropped.mock.calls[0][0]).toBeGreaterThan(64 * 1024 - message.length);
    sink.write(message);
    sink.end();
    expect(dropped).toHaveBeenCalledOnce();
    await sink.drained();
  });

  it('sends a message larger than the cap when nothing else waits', async () => {
    const { response, client, server } = await nonReadingClient();
    opened.push({ client, server });
    const dropped = vi.fn<StreamBufferCap['dropped']>();
    const sink = responseSink(response, { maxBytes: 1024, dropped });
    sink.open();
    // Let the head go out, so the response holds nothing.
    await vi.waitFor(() => expect(response.writableLength).toBe(0));
    sink.write(`data: ${'y'.repeat(10 * 1024 * 1024)}\n\n`);
    expect(response.destroyed).toBe(false);
    expect(dropped).not.toHaveBeenCalled();
    // Anything after it, while it waits, goes past the cap.
    sink.write('data: z\n\n');
    expect(response.destroyed).toBe(true);
    expect(dropped).toHaveBeenCalledOnce();
  });
});
