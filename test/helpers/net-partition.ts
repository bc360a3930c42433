import net from 'node:net';

/**
 * A TCP relay on loopback in front of a server (PostgreSQL, in the replica tests), which a
 * test cuts and restores: the network between the gateway and its database failing, which a
 * test cannot do to the machine's database server itself.
 *
 * - `refuse`: every connection is reset and new ones are closed at once (a server restarting,
 *   a firewall rejecting);
 * - `blackhole`: connections stay open and nothing crosses them, in either direction, new
 *   ones included (a partition, a frozen host). What was sent meanwhile is delivered on
 *   restore, as TCP would once the network heals.
 */
export type Cut = 'refuse' | 'blackhole';

export interface Partition {
  /** The relay's port on 127.0.0.1. */
  readonly port: number;
  /** `url` with its host and port replaced by the relay's. */
  through(url: string): string;
  cut(how: Cut): void;
  /**
   * Relay again. `silent`, after a blackhole: the connections open during it are not relayed
   * again, nor ended (the server forgot them, say it failed over, and nothing tells the
   * client); new ones are relayed.
   */
  restore(held?: 'resume' | 'silent'): void;
  close(): Promise<void>;
}

/** One relayed connection; what arrives while blackholed is held, per direction, until restore. */
interface Pair {
  readonly client: net.Socket;
  upstream: net.Socket | null;
  readonly held: { toUpstream: Buffer[]; toClient: Buffer[] };
}

export async function netPartition(targetHost: string, targetPort: number): Promise<Partition> {
  const pairs = new Set<Pair>();
  /** Client sockets of connections the "server" forgot: kept open, never answered. */
  const silenced = new Set<net.Socket>();
  let state: Cut | 'open' = 'open';

  const drop = (p: Pair) => {
    pairs.delete(p);
    p.client.destroy();
    p.upstream?.destroy();
  };
  const relay = (p: Pair) => {
    for (const b of p.held.toUpstream.splice(0)) p.upstream!.write(b);
    for (const b of p.held.toClient.splice(0)) p.client.write(b);
  };
  const connect = (p: Pair) => {
    const upstream = net.connect(targetPort, targetHost);
    p.upstream = upstream;
    upstream.on('error', () => drop(p)).on('close', () => drop(p));
    upstream.on('data', (b: Buffer) => (state === 'open' ? p.client.write(b) : p.held.toClient.push(b)));
    relay(p);
  };

  const server = net.createServer((client) => {
    if (state === 'refuse') return void client.destroy();
    const p: Pair = { client, upstream: null, held: { toUpstream: [], toClient: [] } };
    pairs.add(p);
    client.on('error', () => drop(p)).on('close', () => drop(p));
    client.on('data', (b: Buffer) => (state === 'open' && p.upstream ? p.upstream.write(b) : p.held.toUpstream.push(b)));
    // Accepted but not relayed while blackholed: the connect itself succeeds, nothing answers.
    if (state === 'open') connect(p);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    port,
    through(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cut(how) {
      state = how;
      if (how === 'refuse') for (const p of [...pairs]) drop(p);
    },
    restore(held = 'resume') {
      state = 'open';
      for (const p of [...pairs]) {
        if (held === 'silent') {
          pairs.delete(p);
          p.client.removeAllListeners('data');
          p.client.on('data', () => {});
          p.upstream?.removeAllListeners('close').removeAllListeners('error').on('error', () => {});
          p.upstream?.destroy();
          silenced.add(p.client);
        } else if (p.upstream) relay(p);
        else connect(p);
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of [...pairs]) drop(p);
        for (const s of silenced) s.destroy();
        server.close(() => resolve());
      }),
  };
}
