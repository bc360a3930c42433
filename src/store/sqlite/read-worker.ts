import { createRequire } from 'node:module';
import { resolve as resolvePath } from 'node:path';
import { Worker } from 'node:worker_threads';

/** One read-only statement; `get` returns the first row's first column, `all` every row. */
export interface ReadStatement {
  readonly sql: string;
  readonly params: readonly number[];
  readonly mode: 'get' | 'all';
}

interface Reply {
  id: number;
  results?: unknown[];
  error?: { message: string; code?: string };
}

/*
 * Inline for the reasons given in checkpointer.ts (a worker cannot load .ts under vitest or
 * tsx). A read-only connection per file: in WAL mode a reader never waits for the gateway's
 * writers nor makes them wait, so a report runs here for as long as it takes while the event
 * loop goes on serving. The statements of one request run in one read transaction: one snapshot.
 */
const WORKER_BODY = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { createRequire } = process.getBuiltinModule('node:module');
const Database = createRequire(workerData.driver)(workerData.driver);
const conns = new Map();
parentPort.on('message', (msg) => {
  let db = conns.get(msg.file);
  try {
    if (!db) { db = new Database(msg.file, { readonly: true, fileMustExist: true, timeout: 5000 }); conns.set(msg.file, db); }
    const results = db.transaction(() => msg.statements.map((st) => {
      const stmt = db.prepare(st.sql);
      return st.mode === 'get' ? stmt.pluck().get(...st.params) : stmt.all(...st.params);
    }))();
    parentPort.postMessage({ id: msg.id, results });
  } catch (e) {
    try { db?.close(); } catch {}
    conns.delete(msg.file);
    parentPort.postMessage({ id: msg.id, error: { message: String((e && e.message) || e), code: e && e.code } });
  }
});
`;

/**
 * Runs read-only statements on SQLite files in a worker thread, so that the gateway's admin
 * reports (usage, cache stats) never block the event loop. The thread starts at the first
 * read and again after it died; it is unref'd, so it never keeps the process alive.
 */
export class ReadWorker {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (r: unknown[]) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closed = false;

  /** Results of `statements` on the database `file`, in order, read in one snapshot. */
  read(file: string, statements: readonly ReadStatement[]): Promise<unknown[]> {
    if (this.closed) return Promise.reject(new Error('read worker is closed'));
    const worker = (this.worker ??= this.start());
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, file: resolvePath(file), statements });
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
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3') },
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
      for (const p of this.pending.values()) p.reject(new Error(`read worker exited (code ${code})`));
      this.pending.clear();
    });
    worker.unref();
    return worker;
  }
}
