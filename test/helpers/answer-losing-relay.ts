import net from 'node:net';

/**
 * A relay to PostgreSQL that, once armed, passes on a statement naming `marker` (a COMMIT is
 * `'COMMIT\0'`) and then drops the connection: the statement may have committed, but its
 * answer is lost (a failover, a partition, a client timeout).
 */
export async function answerLosingRelay(port: number, marker: string): Promise<{ port: number; arm(): void; close(): Promise<void> }> {
  let armed = false;
  const server = net.createServer((client) => {
    const up = net.connect(port, '127.0.0.1');
    let deaf = false;
    client.on('data', (d) => {
      up.write(d);
      if (armed && d.includes(Buffer.from(marker))) {
        armed = false;
        deaf = true;
        setTimeout(() => {
          client.destroy();
          up.end();
        }, 300);
      }
    });
    up.on('data', (d) => {
      if (!deaf) client.write(d);
    });
    client.on('error', () => up.destroy());
    up.on('error', () => client.destroy());
    client.on('close', () => up.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, arm: () => (armed = true), close: () => new Promise<void>((r) => server.close(() => r())) };
}
