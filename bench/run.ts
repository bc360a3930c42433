/**
 * `npm run bench [-- hit miss herd scale workload profile ledger replicas tail]`: measure Tollgate against its
 * ceilings (issue 6) and anchors (issue 16), write BENCHMARKS.md and print a summary. With no names, all run.
 * TOLLGATE_BENCH_TARGET=<dir> benchmarks another build (a directory holding dist/).
 */
import { herdBench } from './herd.js';
import { hitBench } from './hit.js';
import { ledgerBench } from './ledger.js';
import { progress } from './lib/log.js';
import { ORDER, printSummary, writeReport, FILE, type BenchId, type Section } from './lib/report.js';
import { missBench } from './miss.js';
import { profileBench } from './profile.js';
import { replicasBench } from './replicas.js';
import { scaleBench } from './scale.js';
import { tailBench } from './tail.js';
import { workloadBench } from './workload.js';

const BENCHES: Record<BenchId, () => Promise<Section>> = {
  hit: hitBench,
  profile: profileBench,
  miss: missBench,
  herd: herdBench,
  scale: scaleBench,
  workload: workloadBench,
  ledger: ledgerBench,
  replicas: replicasBench,
  tail: tailBench,
};

const asked = process.argv.slice(2);
const unknown = asked.filter((a) => !(ORDER as readonly string[]).includes(a));
if (unknown.length) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; choose from ${ORDER.join(', ')}`);
  process.exit(2);
}
const chosen = ORDER.filter((id) => asked.length === 0 || asked.includes(id));
const startedAt = new Date();
const sections: Section[] = [];
let failed = false;
for (const id of chosen) {
  progress(`${id}: start`);
  const t0 = performance.now();
  try {
    const s = await BENCHES[id]();
    const took = (performance.now() - t0) / 1000;
    s.details += `\n\nThis benchmark took ${took.toFixed(0)} s.`;
    sections.push(s);
    progress(`${id}: done in ${took.toFixed(0)} s`);
  } catch (err) {
    failed = true;
    console.error(`benchmark ${id} failed:`, err);
  }
}
if (sections.length) writeReport(sections, startedAt);
printSummary(sections);
console.log(`\nWrote ${FILE}`);
process.exit(failed ? 1 : 0);
