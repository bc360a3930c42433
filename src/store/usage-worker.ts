import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ReadStatement } from './usage-report.js';

interface Reply {
  id: number;
  results?: unknown[];
  error?: { message: string; code?: string };
}

/*
 * Inline for the reasons given in checkpointer.ts (a worker cannot load .ts under vitest or
 * tsx). Its own read-only connection: in WAL mode a reader never waits for the gateway's
 * writers nor makes them wait, so a report over months of daily totals and two days of raw
 * rows runs here for as long as it takes while the event loop goes on serving. The
 * statements of one request run in one read transaction: one snapshot.
 */
const WORKER_BODY = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { createRequire } = process.getBuiltinModule('node:module');
const Database = createRequire(workerData.driver)(workerData.driver);
let db = null;
parentPort.on('message', (msg) => {
  try {
    db ??= new Database(workerData.file, { readonly: true, fileMustExist: true, timeout: 5000 });
    const results = db.transaction(() => msg.statements.map((st) => {
      const stmt = db.prepare(st.sql);
      return st.mode === 'get' ? stmt.pluck().get(...st.params) : stmt.all(...st.params);
    }))();
    parentPort.postMessage({ id: msg.id, results });
  } catch (e) {
    try { db?.close(); } catch {}
    db = null;
    parentPort.postMessage({ id: msg.id, error: { message: String((e && e.message) || e), code: e && e.code } });
  }
});
`;

/**
 * Runs read-only statements on a SQLite file in a worker thread, so that the gateway's
 * admin reports never block the event loop. The thread starts at the first read and again
 * after it died; it is unref'd, so it never keeps the process alive.
 */
export class UsageReader {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (r: unknown[]) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly file: string) {}

  /** Results of `statements`, in order, read in one snapshot. */
  read(statements: readonly ReadStatement[]): Promise<unknown[]> {
    if (this.closed) return Promise.reject(new Error('usage reader is closed'));
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, statements });
    });
  }

  /** Reads in progress (sent to the worker, not yet answered). */
  inFlight(): number {
    return this.pending.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  private start(): Worker {
    const worker = new Worker(WORKER_BODY, {
      eval: true,
      execArgv: [],
      workerData: { file: resolve(this.file), driver: createRequire(import.meta.url).resolve('better-sqlite3') },
    });
    worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (!p) return;
      if (reply.error) p.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }));
      else p.resolve(reply.results!);
    });
    worker.on('error', () => {
      /* 'exit' follows and fails what is pending */
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = null;
      for (const p of this.pending.values()) p.reject(new Error(`usage report worker exited (code ${code})`));
      this.pending.clear();
    });
    worker.unref();
    return worker;
  }
}
