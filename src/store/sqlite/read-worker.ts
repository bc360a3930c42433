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
  /** A paged read's: whether its last statement has rows left to ask for. */
  more?: boolean;
  error?: { message: string; code?: string };
}

/*
 * Inline for the reasons given in checkpointer.ts (a worker cannot load .ts under vitest or
 * tsx). A read-only connection per file: in WAL mode a reader never waits for the gateway's
 * writers nor makes them wait, so a report runs here for as long as it takes while the event
 * loop goes on serving. The statements of one request run in one read transaction: one snapshot.
 * A paged read (`pageRows`) keeps its statement open on a connection of its own between pages,
 * in one read transaction until its last page, and sends a page only when asked for the next.
 */
const WORKER_BODY = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { createRequire } = process.getBuiltinModule('node:module');
const Database = createRequire(workerData.driver)(workerData.driver);
const conns = new Map();
const cursors = new Map();
const open = (file) => new Database(file, { readonly: true, fileMustExist: true, timeout: 5000 });
const run = (db, st) => { const stmt = db.prepare(st.sql); return st.mode === 'get' ? stmt.pluck().get(...st.params) : stmt.all(...st.params); };
const fail = (id, e) => parentPort.postMessage({ id, error: { message: String((e && e.message) || e), code: e && e.code } });
// A paged read's end: its statement first, for better-sqlite3 refuses to close a connection
// whose statement is mid-iteration (a cancel had left the read, and its snapshot, open for good,
// and no checkpoint could empty the WAL past it).
function end(c) {
  try { c.rows.return(); } catch {}
  try { c.db.close(); } catch {}
}
// The next page of a paged read; its connection, and with it the snapshot, ends with the last.
function page(id) {
  const c = cursors.get(id);
  if (!c) return;
  try {
    const rows = [];
    let r;
    while (rows.length < c.size && !(r = c.rows.next()).done) rows.push(r.value);
    const more = rows.length === c.size;
    if (!more) { cursors.delete(id); end(c); }
    parentPort.postMessage({ id, results: [...c.head, rows], more });
    c.head = [];
  } catch (e) {
    cursors.delete(id);
    end(c);
    fail(id, e);
  }
}
parentPort.on('message', (msg) => {
  if (msg.next) return page(msg.id);
  if (msg.cancel) { const c = cursors.get(msg.id); cursors.delete(msg.id); if (c) end(c); return; }
  if (msg.pageRows) {
    let db;
    try {
      db = open(msg.file);
      db.exec('BEGIN');
      const head = msg.statements.slice(0, -1).map((st) => run(db, st));
      const last = msg.statements[msg.statements.length - 1];
      cursors.set(msg.id, { db, head, rows: db.prepare(last.sql).iterate(...last.params), size: msg.pageRows });
    } catch (e) {
      try { db?.close(); } catch {}
      return fail(msg.id, e);
    }
    return page(msg.id);
  }
  let db = conns.get(msg.file);
  try {
    if (!db) { db = open(msg.file); conns.set(msg.file, db); }
    const results = db.transaction(() => msg.statements.map((st) => run(db, st)))();
    parentPort.postMessage({ id: msg.id, results });
  } catch (e) {
    try { db?.close(); } catch {}
    conns.delete(msg.file);
    fail(msg.id, e);
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
  private readonly pending = new Map<number, { resolve: (r: unknown[], more: boolean) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private closed = false;

  /** Results of `statements` on the database `file`, in order, read in one snapshot. */
  async read(file: string, statements: readonly ReadStatement[]): Promise<unknown[]> {
    return (await this.ask({ file: resolvePath(file), statements })).results;
  }

  /**
   * As read(), with the last statement's rows (mode 'all') read `pageRows` at a time: each page
   * is yielded with the other statements' results (`head`), and the next is asked for only when
   * the consumer asks for it, so each arrives, and is copied into this thread, in an event of its
   * own (receiving 126,000 rows at once held the event loop 150 ms), and a consumer that writes
   * each page out never holds them all. All pages are of one snapshot, on a connection of their
   * own until the last; stopping early (return or throw) ends the read in the worker.
   */
  async *pages(file: string, statements: readonly ReadStatement[], pageRows: number): AsyncGenerator<{ head: unknown[]; rows: unknown[] }> {
    const first = await this.ask({ file: resolvePath(file), statements, pageRows });
    let { results, more } = first;
    const head = results.slice(0, -1);
    try {
      for (;;) {
        yield { head, rows: results[results.length - 1] as unknown[] };
        if (!more) return;
        ({ results, more } = await this.ask({ next: true }, first.id));
      }
    } finally {
      // Still `more`: the consumer stopped, or the next page failed (the worker has dropped it then).
      if (more) this.worker?.postMessage({ id: first.id, cancel: true });
    }
  }

  /** Sends `msg` under `id` (a new one, or a paged read's for its next page) and waits for its reply. */
  private ask(msg: object, id = this.nextId++): Promise<{ id: number; results: unknown[]; more: boolean }> {
    if (this.closed) return Promise.reject(new Error('read worker is closed'));
    const worker = (this.worker ??= this.start());
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: (results, more) => resolve({ id, results, more }), reject });
      worker.postMessage({ id, ...msg });
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
      else p.resolve(reply.results!, reply.more === true);
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
