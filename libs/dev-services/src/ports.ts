import { createServer, type Server } from 'node:net';

/**
 * Ports free on 127.0.0.1 right now, all different: each is found by binding port 0, and the
 * servers are held open together so the kernel cannot hand out the same port twice. Another
 * process may still take one before our child binds it; the window is small enough for dev
 * and tests.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(
        await new Promise<number>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => {
            const address = server.address();
            if (address === null || typeof address === 'string') reject(new Error('no TCP address for port 0'));
            else resolve(address.port);
          });
        }),
      );
    }
    return ports;
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}
