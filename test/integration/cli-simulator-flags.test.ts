import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';

/**
 * `tollgate simulator`'s flags and failures follow the CLI's conventions: a value that does not
 * parse is a usage error (exit 2 naming the flag), not a simulator started with another
 * latency; a port in use is an everyday failure (exit 1, one line naming it), not a bug.
 */
describe('tollgate simulator --latency', () => {
  it.each(['abc', '-5', '1.5', '3000000000', ''])("--latency '%s': exit 2 naming --latency (was: a simulator listening with latency 0, or negative)", async (v) => {
    const r = await runCli(['simulator', '--port', '0', '--latency', v, '--json'], {}, 5_000);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(JSON.parse(r.stderr.trim().split('\n').at(-1)!)).toEqual({ error: { code: 'USAGE_ERROR', message: expect.stringContaining('--latency'), exit_code: 2 } });
  });

  it('a whole number of milliseconds is taken', async () => {
    const sim = await startCli(['simulator', '--port', '0', '--latency', '150', '--json'], {}, /^(\{.*\})$/m);
    try {
      const { url } = JSON.parse(sim.match[1]!) as { url: string };
      const t0 = Date.now();
      // node:http, not fetch: the suite holds fetch's /v1 answers to the gateway's OpenAPI document, and this is the provider's.
      await new Promise((done, fail) => get(`${url}/v1/profile?user_id=1`, { headers: { authorization: 'Bearer sim_provider_key' } }, (res) => res.resume().on('end', done)).on('error', fail));
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    } finally {
      sim.child.kill('SIGTERM');
    }
  });
});

describe('tollgate simulator on a port or address it cannot have', () => {
  it('a port in use: exit 1, one line naming the port and --port (was INTERNAL_ERROR, "a bug", with a stack trace)', async () => {
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    try {
      const port = (taken.address() as AddressInfo).port;
      const r = await runCli(['simulator', '--port', String(port), '--json'], {}, 5_000);
      expect(r.code).toBe(1);
      expect(r.stderr).not.toMatch(/\n +at /);
      expect(JSON.parse(r.stderr.trim())).toEqual({ error: { code: 'RUNTIME_ERROR', message: `port ${port} on 127.0.0.1 is already in use; set --port`, exit_code: 1 } });
      const plain = await runCli(['simulator', '--port', String(port)], {}, 5_000);
      expect(plain.code).toBe(1);
      expect(plain.stderr).toBe(`tollgate: port ${port} on 127.0.0.1 is already in use; set --port\n`);
    } finally {
      taken.close();
    }
  });

  it('no such local address: exit 1 naming --host', async () => {
    const r = await runCli(['simulator', '--port', '0', '--host', '256.1.1.1'], {}, 5_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('tollgate: cannot listen on 256.1.1.1: no such local address; set --host\n');
  });
});
