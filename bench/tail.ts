/**
 * 9. Tail latency and anchors (issue 16): every figure of the issue's table in one run, each
 * against anchors measured in the same run — a bare node:http server answering with the bytes
 * of a recorded hit, and nginx `proxy_cache` (1 worker) in front of the same simulator — with
 * the gateway's event-loop stall maximum per scenario beside an idle gateway's. The 1M-entry
 * figures are benchmark 4's (bench/scale.ts), which reads the same stall probe.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { captured, fillThroughGateway } from './hit.js';
import { DEFERRED_WORK_S, SETTINGS } from './lib/load.js';
import { ensureNginx, startNginx, type Nginx } from './lib/nginx.js';
import { startBaseline } from './lib/procs.js';
import type { Figure, Section } from './lib/report.js';
import { idleStallWithBystander, stallProbe, stopBystander } from './lib/stall.js';
import { entityPath, getAll, SIM_KEY, startStack } from './lib/stack.js';
import { fmt, median } from './lib/stats.js';
import { missesAt, missTable, pace, saturate, SETTLE_S, type Paced, type Saturated, type Server } from './lib/tail-runs.js';
import { adminUsageUnderLoad } from './tail-admin.js';
import { anchorStall, STALL_ALLOWANCE_MS, stallFigure, type AnchorStall } from './lib/tail-stalls.js';
import { progress } from './lib/log.js';

const ENTITIES = 1_000;
const SAT_ROUNDS = 3;
const SAT_S = 6;
const RATE_SHARE = 0.5;
const RATE_ROUNDS = 2;
const RATE_S = 10;
const MISS_CONNECTIONS = 16;
const MISS_ROUNDS = 3;
const MISS_PER_ROUND = 2_000;
const IDLE_MS = 6_000;

const la = () => loadavg().map((x) => x.toFixed(2)).join(', ');
const r3 = (x: number) => x.toFixed(3);

export async function tailBench(): Promise<Section> {
  const loadAtStart = la();
  const stack = await startStack();
  const paths = Array.from({ length: ENTITIES }, (_, i) => entityPath(i));
  let nginx: Nginx | null = null;
  let nginxWhy = '';
  try {
    await fillThroughGateway(stack.gw.url, stack.auth, ENTITIES);
    const [hit] = await getAll(stack.gw.url, [entityPath(0)], stack.auth);
    if (hit!.headers['x-cache-status'] !== 'HIT') throw new Error(`expected a hit, got ${JSON.stringify(hit!.headers)}`);
    const file = join(stack.dir, 'hit-response.json');
    writeFileSync(file, captured(hit!));
    const node = await startBaseline(file, 'node');
    const logged = await startBaseline(file, `logged:${join(stack.dir, 'baseline-requests.log')}`);
    const duties = await startBaseline(file, `duties:${join(stack.dir, 'duties-requests.log')}`);
    const proxy = await startBaseline(file, `proxy:${stack.sim.url}#${SIM_KEY}`);
    const durable = await startBaseline(file, `durable:${stack.sim.url}#${SIM_KEY}#${join(stack.dir, 'durable-anchor')}`);
    const durableDuties = await startBaseline(file, `durable-duties:${stack.sim.url}#${SIM_KEY}#${join(stack.dir, 'durable-duties-anchor')}#${join(stack.dir, 'durable-duties-requests.log')}`);
    try {
      try {
        nginx = await startNginx(ensureNginx(), { dir: join(stack.dir, 'nginx'), upstreamUrl: stack.sim.url, upstreamAuthorization: `Bearer ${SIM_KEY}` });
        await getAll(nginx.url, paths, stack.auth);
        const again = await getAll(nginx.url, paths, stack.auth);
        const notHit = again.filter((r) => r.status !== 200 || r.headers['x-cache-status'] !== 'HIT').length;
        if (notHit) throw new Error(`${notHit} of ${ENTITIES} warmed paths were not nginx cache hits`);
      } catch (e) {
        nginxWhy = (e as Error).message;
        progress(`tail: nginx anchor not measured: ${nginxWhy}`);
        await nginx?.stop();
        nginx = null;
      }
      const [nginxReply] = nginx ? await getAll(nginx.url, [entityPath(0)], stack.auth) : [];
      progress('tail: idle gateway stall reference');
      await new Promise((r) => setTimeout(r, 1_000));
      const idleRef = await idleStallWithBystander(stack.gw.url, IDLE_MS);
      const idleQuiet = idleRef.gateway;
      // The same probe on the gateway while it serves nothing and an anchor takes the load: the machine's
      // noise, and whatever the gateway still does by itself after its own previous round.
      const idleBusy = stallProbe(stack.gw.url);

      const tg: Server = { name: 'Tollgate', url: stack.gw.url, serverPid: stack.gw.pid, headers: stack.auth, stall: stallProbe(stack.gw.url) };
      // Each anchor's own loop is probed per scenario (ownStall), beside the gateway's over the same spans.
      const own = (name: string, c: { probeUrl?: string }) => anchorStall(name, c.probeUrl);
      const [satBare, satDuties] = [own('bare node:http', node), own('the duties anchor', duties)];
      const bare: Server = { name: 'bare node:http', url: node.url, serverPid: node.pid, headers: stack.auth, stall: idleBusy, ownStall: satBare.probe };
      const bareLogged: Server = { name: 'bare node:http + request line', url: logged.url, serverPid: logged.pid, headers: stack.auth, stall: idleBusy };
      const bareDuties: Server = { name: "bare node:http doing a gateway's duties", url: duties.url, serverPid: duties.pid, headers: stack.auth, stall: idleBusy, ownStall: satDuties.probe };
      const ngx: Server | null = nginx ? { name: 'nginx proxy_cache, 1 worker', url: nginx.url, serverPid: nginx.workerPid, headers: stack.auth, stall: idleBusy } : null;
      const sat = await saturate([bare, bareLogged, bareDuties, ...(ngx ? [ngx] : []), tg], ENTITIES, SAT_ROUNDS, SAT_S);
      const [sN, sL, sD, sT] = [sat[0]!, sat[1]!, sat[2]!, sat[sat.length - 1]!];
      const sX = ngx ? sat[3]! : null;
      const satStall = tg.stall!.worst;

      const rate = Math.round(sT.rps * RATE_SHARE);
      const tgPaced: Server = { ...tg, stall: stallProbe(stack.gw.url) };
      const [paceBare, paceDuties] = [own('bare node:http', node), own('the duties anchor', duties)];
      const paced = [{ ...bare, ownStall: paceBare.probe }, { ...bareDuties, ownStall: paceDuties.probe }, tgPaced];
      const [pN, pD, pT] = (await pace(paced, rate, ENTITIES, RATE_ROUNDS, RATE_S)) as [Paced, Paced, Paced];
      const paceStall = tgPaced.stall!.worst;

      const sim: Server = { name: 'simulator', url: stack.sim.url, serverPid: stack.sim.pid, headers: { authorization: `Bearer ${SIM_KEY}` }, stall: idleBusy };
      const tgMiss: Server = { ...tg, stall: stallProbe(stack.gw.url) };
      const bareProxy: Server = { name: 'bare node:http proxy', url: proxy.url, serverPid: proxy.pid, headers: stack.auth, stall: idleBusy };
      const durableProxy: Server = { name: 'the bare proxy making the durable writes', url: durable.url, serverPid: durable.pid, headers: stack.auth, stall: idleBusy };
      const missDuties = own('the durable-duties miss anchor', durableDuties);
      const dutiesProxy: Server = { name: "the same doing a gateway's duties too", url: durableDuties.url, serverPid: durableDuties.pid, headers: stack.auth, stall: idleBusy, ownStall: missDuties.probe };
      const missAnchors = [bareProxy, durableProxy, dutiesProxy];
      const misses = await missesAt(sim, tgMiss, MISS_CONNECTIONS, MISS_ROUNDS, MISS_PER_ROUND, missAnchors);
      const missStall = tgMiss.stall!.worst;
      await node.stop();
      await logged.stop();
      await duties.stop();
      await proxy.stop();
      await durable.stop();
      await durableDuties.stop();
      await nginx?.stop();
      nginx = null;

      const admin = await adminUsageUnderLoad(rate, ENTITIES);
      const loadAtEnd = la();
      const idle = idleQuiet;

      const added50 = median(misses.map((m) => m.gateway.p50 - m.direct.p50));
      const added99 = median(misses.map((m) => m.gateway.p99 - m.direct.p99));
      const [proxyAdded50, durableAdded50, dutiesAdded50] = missAnchors.map((_, i) => median(misses.map((m) => m.anchors[i]!.p50 - m.direct.p50))) as [number, number, number];
      const missCpu = median(misses.map((m) => m.gateway.cpuUsPerRequest));
      const dutiesMissCpu = median(misses.map((m) => m.anchors[2]!.cpuUsPerRequest));
      const missFailures = misses.reduce((a, m) => a + m.gateway.non2xx + m.gateway.errors + m.direct.non2xx + m.direct.errors, 0);
      const adminMax = Math.max(...admin.reports.map((w) => w.hits.max));
      const adminStall = Math.max(...admin.reports.map((w) => w.stallMs));
      const none = (figure: string): Figure => ({ figure, measured: 'not measured', baseline: nginxWhy, ratio: null, target: '—', pass: null });
      const stallRow = (scenario: string, ms: number, bystander: number, anchors: AnchorStall[] = []) => stallFigure(idle, scenario, ms, bystander, anchors);
      const ok = sT.failures === 0;
      const figures: Figure[] = [
        { figure: 'Hit throughput ÷ bare node:http (64 connections)', measured: `${fmt.int(sT.rps)} req/s`, baseline: `${fmt.int(sN.rps)} req/s`, ratio: sT.rps / sN.rps, target: '—', pass: null },
        sX
          ? { figure: 'Hit throughput ÷ nginx proxy_cache (64 connections)', measured: `${fmt.int(sT.rps)} req/s`, baseline: `${fmt.int(sX.rps)} req/s`, ratio: sT.rps / sX.rps, target: '—', pass: null }
          : none('Hit throughput ÷ nginx proxy_cache'),
        { figure: 'Server CPU per hit ÷ bare node:http', measured: `${sT.cpuUs.toFixed(1)} µs`, baseline: `${sN.cpuUs.toFixed(1)} µs`, ratio: sT.cpuUs / sN.cpuUs, target: '≤ 1.5', pass: ok && sT.cpuUs / sN.cpuUs <= 1.5 },
        // What the product's one request line per answer costs a bare server: the rest of the gap is the gateway's own work.
        { figure: 'Server CPU per hit ÷ bare node:http writing a request line per answer', measured: `${sT.cpuUs.toFixed(1)} µs`, baseline: `${sL.cpuUs.toFixed(1)} µs`, ratio: sT.cpuUs / sL.cpuUs, target: '—', pass: null },
        // What the duties of a hit (key hash, rate window, query, request id, envelope, metrics, request line) cost a bare
        // server, and what Tollgate costs beyond them: the item-4 ratio cannot fall below the first (BENCHMARKS.md §9).
        { figure: "Server CPU per hit of bare node:http doing a gateway's duties ÷ bare node:http", measured: `${sD.cpuUs.toFixed(1)} µs`, baseline: `${sN.cpuUs.toFixed(1)} µs`, ratio: sD.cpuUs / sN.cpuUs, target: '—', pass: null },
        { figure: "Server CPU per hit ÷ bare node:http doing a gateway's duties", measured: `${sT.cpuUs.toFixed(1)} µs`, baseline: `${sD.cpuUs.toFixed(1)} µs`, ratio: sT.cpuUs / sD.cpuUs, target: '—', pass: null },
        { figure: `Server CPU per hit at ${fmt.int(rate)}/s ÷ bare node:http / ÷ bare node:http doing a gateway's duties`, measured: `${pT.cpuUs.toFixed(1)} µs`, baseline: `${pN.cpuUs.toFixed(1)} / ${pD.cpuUs.toFixed(1)} µs`, ratio: pT.cpuUs / pD.cpuUs, target: '—', pass: null },
        sX
          ? { figure: 'Server CPU per hit ÷ nginx proxy_cache', measured: `${sT.cpuUs.toFixed(1)} µs`, baseline: `${sX.cpuUs.toFixed(1)} µs`, ratio: sT.cpuUs / sX.cpuUs, target: '—', pass: null }
          : none('Server CPU per hit ÷ nginx proxy_cache'),
        { figure: 'Hit p50 at saturation ÷ bare node:http', measured: fmt.ms(sT.p50), baseline: fmt.ms(sN.p50), ratio: sT.p50 / sN.p50, target: '—', pass: null },
        { figure: 'Hit p99 at saturation ÷ bare node:http', measured: fmt.ms(sT.p99), baseline: fmt.ms(sN.p99), ratio: sT.p99 / sN.p99, target: '—', pass: null },
        { figure: 'Hit p99.9 at saturation (64 connections) ÷ bare node:http', measured: fmt.ms(sT.p999), baseline: fmt.ms(sN.p999), ratio: sT.p999 / sN.p999, target: '≤ 3', pass: ok && sT.p999 / sN.p999 <= 3 },
        { figure: `Hit p99.9 at ${fmt.int(rate)}/s (50% of max) ÷ bare node:http at the same rate`, measured: fmt.ms(pT.p999), baseline: fmt.ms(pN.p999), ratio: pT.p999 / pN.p999, target: '≤ 1.5', pass: pT.failures === 0 && pT.p999 / pN.p999 <= 1.5 },
        { figure: `Hit max at ${fmt.int(rate)}/s (50% of max) ÷ bare node:http at the same rate`, measured: fmt.ms(pT.max), baseline: fmt.ms(pN.max), ratio: pT.max / pN.max, target: '≤ 1.5', pass: pT.failures === 0 && pT.max / pN.max <= 1.5 },
        // The same tail against the anchor doing a hit's duties: what the duties' CPU alone does to the tail at this rate.
        { figure: `Hit p99.9 / max at ${fmt.int(rate)}/s ÷ bare node:http doing a gateway's duties at the same rate`, measured: `${fmt.ms(pT.p999)} / ${fmt.ms(pT.max)}`, baseline: `${fmt.ms(pD.p999)} / ${fmt.ms(pD.max)}`, ratio: pT.p999 / pD.p999, target: '—', pass: null },
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, median`, measured: fmt.ms(added50), baseline: `${fmt.ms(median(misses.map((m) => m.direct.p50)))} direct`, ratio: null, target: '≤ 1 ms', pass: missFailures === 0 && added50 <= 1 },
        // What forwarding alone adds in a Node server at this concurrency: the part of the ≤ 1 ms no gateway on Node escapes.
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, median, by a bare node:http proxy (forwarding only)`, measured: fmt.ms(proxyAdded50), baseline: `${fmt.ms(median(misses.map((m) => m.direct.p50)))} direct`, ratio: null, target: '—', pass: null },
        // What the durable writes (reservation, settle, cache put; each its own transaction) add on top, written plainly.
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, median, by a bare node:http proxy making a miss's durable writes`, measured: fmt.ms(durableAdded50), baseline: `${fmt.ms(median(misses.map((m) => m.direct.p50)))} direct`, ratio: null, target: '—', pass: null },
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, median, Tollgate ÷ that anchor`, measured: fmt.ms(added50), baseline: fmt.ms(durableAdded50), ratio: added50 / durableAdded50, target: '—', pass: null },
        // And with every request's duties and the provider answer's (its envelope parsed, its charge read) done too.
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, median, Tollgate ÷ the same anchor doing a gateway's duties too`, measured: fmt.ms(added50), baseline: fmt.ms(dutiesAdded50), ratio: added50 / dutiesAdded50, target: '—', pass: null },
        { figure: `Server CPU per miss, concurrency ${MISS_CONNECTIONS}, Tollgate ÷ that anchor`, measured: `${missCpu.toFixed(0)} µs`, baseline: `${dutiesMissCpu.toFixed(0)} µs`, ratio: missCpu / dutiesMissCpu, target: '—', pass: null },
        { figure: `Miss latency added, concurrency ${MISS_CONNECTIONS}, p99`, measured: fmt.ms(added99), baseline: `${fmt.ms(median(misses.map((m) => m.direct.p99)))} direct`, ratio: null, target: '≤ 5 ms', pass: missFailures === 0 && added99 <= 5 },
        { figure: `Hit max while GET /admin/usage runs (${fmt.int(admin.rows)} ledger rows, ${fmt.int(rate)}/s)`, measured: fmt.ms(adminMax), baseline: `${fmt.ms(admin.quiet.hits.max)} without it`, ratio: adminMax / admin.quiet.hits.max, target: '—', pass: null },
        stallRow('hits at saturation', satStall, tg.stall!.bystanderWorst, [satBare, satDuties]),
        stallRow(`hits at ${fmt.int(rate)}/s`, paceStall, tgPaced.stall!.bystanderWorst, [paceBare, paceDuties]),
        stallRow(`misses at concurrency ${MISS_CONNECTIONS}`, missStall, tgMiss.stall!.bystanderWorst, [missDuties]),
        stallRow('no requests, between its own rounds (while the anchors are loaded)', idleBusy.worst, idleBusy.bystanderWorst),
        stallRow(`hits over a ${fmt.int(admin.rows)}-row ledger, no admin work`, admin.quiet.stallMs, admin.quiet.bystanderMs),
        stallRow('GET /admin/usage under hit load', adminStall, Math.max(...admin.reports.map((w) => w.bystanderMs))),
      ];
      const bytes = (headers: Record<string, string>, body: string) => `${Buffer.byteLength(body)} B body, ${Object.keys(headers).length} headers`;
      const satRow = (s: Saturated) =>
        `| ${s.server.name} | ${fmt.int(s.rps)} | ${s.cpuUs.toFixed(1)} µs | ${fmt.ms(s.p50)} | ${fmt.ms(s.p99)} | ${fmt.ms(s.p999)} | ${fmt.ms(s.max)} | ${s.rounds.map((r) => r.serverCores.toFixed(2)).join(' / ')} | ${s.rounds.map((r) => r.generatorCores.toFixed(2)).join(' / ')} | ${s.failures} |`;
      const paceRow = (p: Paced) =>
        `| ${p.server.name} | ${fmt.int(p.n)} | ${fmt.ms(p.p50)} | ${fmt.ms(p.p99)} | ${fmt.ms(p.p999)} | ${fmt.ms(p.max)} | ${p.rounds.map((r) => fmt.ms(r.max)).join(' / ')} | ${p.rounds.map((r) => fmt.ms(r.settling.max)).join(' / ')} | ${p.cpuUs.toFixed(1)} µs | ${p.rounds.map((r) => r.generatorCores.toFixed(2)).join(' / ')} | ${fmt.ms(p.generatorStallMs)} | ${p.failures} |`;
      return {
        id: 'tail',
        title: '9. Tail latency and anchors (issue 16)',
        figures,
        details: [
          `Load average ${loadAtStart} at the start of this benchmark, ${loadAtEnd} at its end (2 cores): every figure is noisy when it is high.`,
          '',
          'Anchors, in their own processes, measured in the same run as Tollgate and alternated with it round by round:',
          `- bare \`node:http\` answering every request with the bytes of a recorded Tollgate hit (${bytes(hit!.headers, hit!.body)});`,
          "- the same bare server doing, as plainly as it can, a gateway's duties per hit (bench/lib/gateway-duties.ts): the key's SHA-256 looked up, its rate",
          '  window counted, the query parsed and keyed, a ULID request id in the header and the body, three prom-client metrics, the request line;',
          nginx === null && nginxWhy
            ? `- nginx \`proxy_cache\`: **not measured** (${nginxWhy});`
            : `- nginx \`proxy_cache\` (one worker, disk cache keyed by \`$request_uri\`, \`access_log off\`, keep-alive without a request cap) in front of the same simulator,`,
          sX && nginxReply ? `  warmed with the ${fmt.int(ENTITIES)} paths and checked to answer each from its cache (\`X-Cache-Status: HIT\`; ${bytes(nginxReply.headers, nginxReply.body)}).` : '',
          '',
          `**Saturation**: autocannon, ${SETTINGS.connections} connections, ${SETTINGS.warmupS} s warm-up each, then ${SAT_ROUNDS} rounds of ${SAT_S} s per server in turn, ids uniform`,
          `over ${fmt.int(ENTITIES)} cached profiles. Throughput is the best round; CPU per hit (server CPU time from /proc/<pid>/stat ÷ answers) and latencies are medians over the rounds.`,
          '',
          '| Server | Hits/s | CPU per hit | p50 | p99 | p99.9 | max | Server cores (rounds) | Generator cores | Failures |',
          '|---|---:|---:|---:|---:|---:|---:|---|---|---:|',
          ...sat.map(satRow),
          '',
          `**Constant rate**: ${fmt.int(rate)} requests/s (${RATE_SHARE * 100}% of Tollgate's best saturated round above), wrk2-style (bench/lib/open-loop.ts: request i is due at`,
          `i ÷ rate and its latency counts from then, so a stall delays every request due during it), ${SETTINGS.connections} connections opened first, 2 s warm-up, ${RATE_ROUNDS} rounds of ${RATE_S} s`,
          `per server alternated, each after ${SETTLE_S} s not counted (the generator's own start-up; its max is shown); percentiles over all rounds together. "Generator stall" is the load generator\'s own longest event-loop`,
          "stall (1 ms resolution): a latency near it may be the generator's, not the server's.",
          '',
          '| Server | Answers | p50 | p99 | p99.9 | max | max per round | max in the first second (not counted) | CPU per hit | Generator cores | Generator stall | Failures |',
          '|---|---:|---:|---:|---:|---:|---|---|---:|---|---:|---:|',
          paceRow(pN),
          paceRow(pD),
          paceRow(pT),
          '',
          `**Misses at concurrency ${MISS_CONNECTIONS}**: ${MISS_CONNECTIONS} closed-loop connections, each request an entity never asked for before, ${fmt.int(MISS_PER_ROUND)} straight to the`,
          `simulator, then ${fmt.int(MISS_PER_ROUND)} through a bare node:http proxy (bench/lib/proxy-anchor.ts: undici, forwarding only), then through the same`,
          `proxy making the durable writes a miss obliges (bench/lib/durable-proxy-anchor.ts: reservation, settle with ledger row, rollup and budget counters, cache put;`,
          `each its own transaction), then through that proxy doing a gateway's duties too (the hit anchor's, and the provider answer's envelope parsed and its`,
          `\`meta.credits_used\` charged), then through Tollgate, ${MISS_ROUNDS} rounds; added = the percentile through it − the simulator's, median over rounds;`,
          `CPU per miss = the server's CPU from the round's start to ${DEFERRED_WORK_S} s after its last answer (work deferred past the answers counts) ÷ its misses.`,
          '',
          ...missTable(misses, missAnchors),
          '',
          `**Admin report under load**: a second gateway over a ledger of ${fmt.int(admin.rows)} rows written in bulk (bench/ledger.ts's, ${admin.fillS.toFixed(0)} s), the`,
          `same constant-rate hit load (${fmt.int(rate)}/s, ${admin.failures} failures, generator stall ${fmt.ms(admin.generatorStallMs)}); hits in flight during each window.`,
          '',
          '| Window | Took | Hits | Hit p99 | Hit max | Event-loop stall max | What it did |',
          '|---|---:|---:|---:|---:|---:|---|',
          ...[admin.quiet, ...admin.reports].map((w) => `| ${w.name} | ${fmt.ms(w.tookMs)} | ${fmt.int(w.hits.n)} | ${fmt.ms(w.hits.p99)} | ${fmt.ms(w.hits.max)} | ${fmt.ms(w.stallMs)} | ${w.detail} |`),
          '',
          `**Event-loop stalls**: the gateway's \`nodejs_eventloop_lag_max_seconds\` (prom-client's \`monitorEventLoopDelay\`, 10 ms resolution, reset at each`,
          `scrape of GET /metrics), scraped before and after each measured run; the worst span per scenario. The reference ("idle") is the same`,
          `probe over ${IDLE_MS / 1000} s of the gateway after its fill, serving nothing while this benchmark loads nothing else: ${fmt.ms(idleQuiet)} (an idle loop`,
          `reads about the 10 ms resolution; more is other processes' CPU). Target (issue 16, item 1): no scenario over idle + ${STALL_ALLOWANCE_MS} ms.`,
          `Beside each figure, "bystander" is what the same probe read over the same spans in a node process doing nothing (${fmt.ms(idleRef.bystander)} over the idle reference):`,
          `the time this machine's other processes kept any process from running, which the gateway's reading includes; "own" is the same probe in an anchor's`,
          `process over its own runs of the scenario (bench/baseline-server.ts loopProbe): what the same load does to a server that does none of Tollgate's work.`,
          `The gateway was also probed while it served nothing during each anchor's run, which follows one of its own rounds (saturation`,
          `and constant rate) or misses: ${idleBusy.spans.map((ms) => fmt.ms(ms)).join(', ')}, in order (anchor runs: ${sat.length - 1} per saturation round, then 1 per`,
          `constant-rate round, then 1 per miss round). Work the gateway defers past a load (ledger batches, checkpoints, the maintenance pass) shows there.`,
          'The 1M-entry stall is in benchmark 4.',
        ]
          .filter((l, i, a) => l !== '' || a[i - 1] !== '')
          .join('\n'),
      };
    } finally {
      await node.stop();
      await logged.stop();
      await duties.stop();
      await proxy.stop();
      await durable.stop();
      await durableDuties.stop();
      await nginx?.stop();
    }
  } finally {
    await stack.close();
    stopBystander();
  }
}
