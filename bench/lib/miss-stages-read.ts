/**
 * Reads what bench/lib/miss-stages.mjs wrote for one gateway (bench/miss-c16.ts): each miss's
 * events put in order, and the time between them, as a table in µs (median and mean over the
 * misses of every measured round; the first round, the warm-up, is left out).
 */
import { readFileSync } from 'node:fs';
import { median } from './stats.js';

interface Ev {
  t: number;
  dur: number;
  kind: string;
  imm: number;
  tag: string;
  text: string;
}

interface Imm {
  scheduled: number;
  start: number;
  end: number;
  name: string;
}

/** One miss's events (absent: not seen). */
interface Miss {
  req?: number;
  read?: Ev;
  resv?: Ev;
  up?: Ev;
  uph?: number;
  ledger?: Ev;
  put?: Ev;
  head?: Ev;
  fin?: number;
}

const entity = (s: string): string | null => /person\.id[=:](\d+)/.exec(s)?.[1] ?? null;

function parse(text: string): Ev[][] {
  const rounds: Ev[][] = [[]];
  for (const l of text.split('\n')) {
    if (!l) continue;
    const [t, dur, kind, imm, tag, ...rest] = l.split(' ');
    const ev = { t: Number(t), dur: Number(dur), kind: kind!, imm: Number(imm), tag: tag!, text: rest.join(' ') };
    rounds[rounds.length - 1]!.push(ev);
    if (kind === 'ELU') rounds.push([]);
  }
  return rounds.filter((r) => r.length > 0);
}

/** A no-wait batch (no-wait.ts): from its `PRAGMA busy_timeout = 0` to the PRAGMA restoring the timeout, on one db. */
interface Batch {
  start: number;
  end: number;
  writes: number;
}

function missesOf(evs: Ev[]): { misses: Miss[]; imms: Map<number, Imm>; batchOf: Map<Ev, Batch>; batches: Batch[] } {
  const imms = new Map<number, Imm>();
  const batchOf = new Map<Ev, Batch>();
  const batches: Batch[] = [];
  const open = new Map<string, Batch>();
  const byReqId = new Map<string, string>();
  for (const e of evs) {
    if (e.kind === 'IMM') {
      const [name, start] = e.text.split(' ');
      imms.set(Number(e.tag), { scheduled: e.t, start: Number(start), end: e.t + e.dur, name: name! });
    }
    if (e.kind === 'HEAD') byReqId.set(e.tag, entity(e.text) ?? '');
  }
  const m = new Map<string, Miss>();
  const of = (id: string | null): Miss | null => (id ? (m.get(id) ?? m.set(id, {}).get(id)!) : null);
  for (const e of evs) {
    if (e.kind === 'SQL' && e.text.includes(':PRAGMA_busy_timeout_=_')) {
      const db = e.text.split(':')[0]!;
      if (e.text.endsWith('_=_0')) open.set(db, { start: e.t, end: NaN, writes: 0 });
      else {
        const b = open.get(db);
        if (b) {
          b.end = e.t + e.dur;
          batches.push(b);
          open.delete(db);
        }
      }
    }
    if (e.kind === 'REQ') of(entity(e.tag))!.req = e.t;
    else if (e.kind === 'FIN') of(entity(e.tag))!.fin = e.t;
    else if (e.kind === 'HEAD') of(entity(e.text))!.head = e;
    else if (e.kind === 'UP') of(entity(e.tag))!.up = e;
    else if (e.kind === 'UPH') of(entity(e.tag))!.uph = e.t;
    else if (e.kind === 'SQL') {
      const [db, , ...words] = e.text.split(':');
      const what = words.join(':');
      const x = of(e.tag.startsWith('req_') ? (byReqId.get(e.tag) ?? null) : entity(e.tag));
      if (!x) continue;
      if (db === 'cache.db' && what.startsWith('SELECT') && !x.read) x.read = e;
      else if (db === 'cache.db' && what.startsWith('INSERT_INTO_entries')) x.put = e;
      else if (db === 'tollgate.db' && /^INSERT_(OR_REPLACE_)?INTO_reservations/.test(what)) x.resv = e;
      else if (db === 'tollgate.db' && what.startsWith('INSERT_OR_IGNORE_INTO_ledger')) x.ledger = e;
      const b = open.get(db!);
      if (b && (x.resv === e || x.ledger === e || x.put === e)) {
        b.writes++;
        batchOf.set(e, b);
      }
    }
  }
  return { misses: [...m.values()], imms, batchOf, batches };
}

/** The stage table of one traced gateway's file. */
export function stageTable(file: string): string {
  const rounds = parse(readFileSync(file, 'utf8')).slice(1);
  const rows = new Map<string, number[]>();
  const add = (name: string, v: number | undefined) => {
    if (v === undefined || !Number.isFinite(v)) return;
    (rows.get(name) ?? rows.set(name, []).get(name)!).push(v * 1000);
  };
  const elu: string[] = [];
  const sizes: number[] = [];
  let complete = 0;
  let seen = 0;
  for (const evs of rounds) {
    const last = evs[evs.length - 1]!;
    if (last.kind === 'ELU') elu.push(last.text.split(' ')[0]!);
    const { misses, imms, batchOf, batches } = missesOf(evs);
    for (const b of batches) sizes.push(b.writes);
    for (const x of misses) {
      seen++;
      if (x.req === undefined || !x.read || !x.resv || !x.up || !x.ledger || !x.put || !x.head || x.fin === undefined) continue;
      complete++;
      const rb = batchOf.get(x.resv);
      const lb = batchOf.get(x.ledger);
      const pb = batchOf.get(x.put);
      const hb = imms.get(x.head.imm);
      if (!rb || !lb || !pb) continue;
      const upEnd = x.up.t + x.up.dur;
      const writesStart = Math.min(lb.start, pb.start);
      const writesEnd = Math.max(lb.end, pb.end);
      add('1. arrival → cache read (admission, key, rate, parse)', x.read.t - x.req);
      add('2. cache read (SELECT)', x.read.dur);
      add("3. read → reservation's batch runs (rest of the turn)", rb.start - (x.read.t + x.read.dur));
      add('4. reservation batch (BEGIN … COMMIT, PRAGMAs)', rb.end - rb.start);
      add('   of which this reservation\'s INSERT', x.resv.dur);
      add('5. batch end → provider request created', x.up.t - rb.end);
      add('6. provider call: created → headers', (x.uph ?? NaN) - x.up.t);
      add('7. provider call: headers → last byte', upEnd - (x.uph ?? NaN));
      add('8. last byte → first write batch runs (checks, queue, rest of the turn)', writesStart - upEnd);
      add('9. ledger row + cache put batches', writesEnd - writesStart);
      add("   of which this ledger row's INSERT", x.ledger.dur);
      add("   of which this put's INSERT", x.put.dur);
      add('10. writes end → answer writing starts (TurnWrites)', x.head.t - writesEnd);
      // Inside a setImmediate of its own (TurnWrites before atTurnEnd): when that turn's end began.
      if (hb && hb.start > writesEnd) add('    of which waiting for a turn of the event loop', hb.start - writesEnd);
      add('11. writeHead → finish', x.fin - x.head.t);
      add('all: arrival → finish', x.fin - x.req);
    }
  }
  const out = ['| Stage (µs) | median | mean |', '|---|---:|---:|'];
  for (const [name, v] of rows) out.push(`| ${name} | ${median(v).toFixed(0)} | ${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(0)} |`);
  const sizeMean = sizes.length ? sizes.reduce((a, b) => a + b, 0) / sizes.length : 0;
  out.push('', `${complete} of ${seen} misses with every event; writes per no-wait batch: mean ${sizeMean.toFixed(2)} over ${sizes.length} batches; event-loop utilisation per round: ${elu.join(', ')}`);
  return out.join('\n');
}
