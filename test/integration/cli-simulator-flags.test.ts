import { get } from 'node:http';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from '../helpers/cli.js';

/**
 * `tollgate simulator --latency` is a value like any other flag's: one that does not parse is
 * a usage error (exit 2 naming the flag), not a simulator started with another latency.
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
