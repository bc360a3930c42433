import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

export interface CheckpointerOptions {
  /** How often to checkpoint every file; 1 s by default. */
  intervalMs?: number;
  /**
   * A WAL file larger than this is checkpointed with TRUNCATE (reset to zero bytes) rather
   * than PASSIVE, so it cannot grow without bound; 64 MiB by default.
   */
  truncateAboveBytes?: number;
  /** close() gives the final checkpoint this long, then abandons the worker; 5 s by default. */
  closeTimeoutMs?: number;
  /** Called for every failed checkpoint (`file`) or worker failure (`file` null). Never throws out. */
  onError: (err: Error, file: string | null) => void;
  /** Called for every TRUNCATE checkpoint (rare: a WAL past truncateAboveBytes), for the log. Never throws out. */
  onTruncate?: (result: CheckpointResult) => void;
}

export interface CheckpointResult {
  file: string;
  mode: 'PASSIVE' | 'TRUNCATE';
  /** Size of the -wal file before the checkpoint. */
  walBytes: number;
  /** True when readers or a writer kept the checkpoint from completing (it retries next time). */
  busy: boolean;
  /** Frames in the WAL, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
  /** TRUNCATE: the PASSIVE passes made first, without the write lock. */
  passes: number;
  /** TRUNCATE: how long its last try took, which is about how long it held the write lock when not busy. */
  lockMs: number;
}

interface Reply {
  id: number;
  results: CheckpointResult[];
  errors: Array<{ file: string; message: string; code?: string }>;
}

/** A WAL file larger than this is truncated by the next checkpoint (CheckpointerOptions.truncateAboveBytes). */
export const WAL_TRUNCATE_ABOVE_BYTES = 64 * 1024 * 1024;

/** Attempts at a TRUNCATE checkpoint per tick, 2 ms apart, while writes keep taking the lock. */
const TRUNCATE_TRIES = 10;
/**
 * Before a TRUNCATE, PASSIVE passes (at most this many) until less than CATCH_UP_BYTES was
 * written to the WAL during the last one: what the TRUNCATE copies, and fsyncs, it does holding
 * the write lock.
 */
const CATCH_UP_PASSES = 4;
const CATCH_UP_BYTES = 1024 * 1024;

/*
 * The worker body is a small inline script run with `eval: true`, not a file of its own.
 * Node 20 cannot load a .ts file in a worker and vitest's transform does not reach worker
 * threads, so a `checkpoint-worker.ts` would only work from dist/; a hand-written .js next to
 * it would not be emitted by tsc. An inline body behaves the same under node, tsx and vitest.
 * It uses neither `require` nor `import` (process.getBuiltinModule and createRequire work
 * whether Node evaluates it as CommonJS or, under `--input-type=module`, as ESM), and it
 * gets no execArgv (no loaders such as tsx: it needs none). The driver's path is resolved
 * here, relative to this module, so the worker does not depend on the process's cwd.
 *
 * Each file gets its own connection with busy timeout 0: PASSIVE never waits, and a TRUNCATE
 * that finds a reader or writer in the way checkpoints what it can and reports busy instead
 * of holding the write lock (and so stalling the gateway's writers) while it waits.
 */
const WORKER_BODY = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { statSync, openSync, fsyncSync, closeSync } = process.getBuiltinModule('node:fs');
const { createRequire } = process.getBuiltinModule('node:module');
const Database = createRequire(workerData.driver)(workerData.driver);
const conns = new Map();
const pause = new Int32Array(new SharedArrayBuffer(4));
const syncFile = (f) => { const fd = openSync(f, 'r'); try { fsyncSync(fd); } finally { closeSync(fd); } };
const walSize = (file) => { try { return statSync(file + '-wal').size; } catch { return 0; } };
function checkpoint(file, again) {
  let db = conns.get(file);
  if (!db) { db = new Database(file, { fileMustExist: true, timeout: 0 }); conns.set(file, db); }
  const walBytes = walSize(file);
  const mode = walBytes > workerData.truncateAboveBytes ? 'TRUNCATE' : 'PASSIVE';
  let r, passes = 0, lockMs = 0;
  if (mode === 'TRUNCATE') {
    // TRUNCATE holds the write lock while it copies and fsyncs: copy first without it (PASSIVE,
    // again while the writes keep ahead), so that it holds the lock only for the frames written
    // since, their fsync and the truncation. It never waits for the lock (busy timeout 0): when a
    // write holds it, try again shortly.
    let size = walBytes, appended;
    do { r = db.pragma('wal_checkpoint(PASSIVE)')[0]; passes++; const now = walSize(file); appended = now - size; size = now; }
    while (appended > workerData.catchUpBytes && passes < workerData.catchUpPasses);
    // A PASSIVE pass that does not reach the WAL's end (writes kept coming) leaves its copies
    // unsynced: the TRUNCATE's fsync then flushed them all under the lock (114-178 ms at 1M
    // entries during a purge; 33-56 ms after this, ~20 ms once bulk deletes also pause for it:
    // batch-pause.ts). Flush them, and the WAL, without it.
    syncFile(file);
    syncFile(file + '-wal');
    for (let i = 0; ; i++) {
      const t0 = performance.now();
      r = db.pragma('wal_checkpoint(TRUNCATE)')[0];
      lockMs = performance.now() - t0;
      if (r.busy === 0 || i >= workerData.truncateTries) break;
      Atomics.wait(pause, 0, 0, 2);
    }
  } else r = db.pragma('wal_checkpoint(PASSIVE)')[0];
  // -1: this connection saw the file before it was switched to WAL (opened in between its
  // creation and its first pragma); a new connection sees the WAL.
  if (r.log === -1 && !again) { drop(file); return checkpoint(file, true); }
  return { file, mode, walBytes, busy: r.busy !== 0, log: r.log, checkpointed: r.checkpointed, passes, lockMs };
}
function drop(file) { try { conns.get(file)?.close(); } catch {} conns.delete(file); }
parentPort.on('message', (msg) => {
  const results = [], errors = [];
  for (const file of workerData.files) {
    try { results.push(checkpoint(file)); }
    catch (e) { errors.push({ file, message: String((e && e.message) || e), code: e && e.code }); drop(file); }
  }
  if (msg.last) for (const file of [...conns.keys()]) drop(file);
  parentPort.postMessage({ id: msg.id, results, errors });
});
`;

/**
 * Checkpoints SQLite WAL files from a worker thread, so the fsyncs of a checkpoint never run
 * on the request thread. Open the databases with `openDatabase(file, m, { autoCheckpoint: false })`
 * and hand their files here. The worker is unref'd: it never keeps the process alive.
 */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly timer: NodeJS.Timeout;
  private readonly pending = new Map<number, { resolve: (r: CheckpointResult[]) => void; reject: (e: Error) => void }>();
  private readonly closeTimeoutMs: number;
  private readonly onError: (err: Error, file: string | null) => void;
  private nextId = 1;
  /** Awaited requests (checkpoint(), close()) that keep the process alive until answered. */
  private held = 0;
  private inFlight = false;
  private alive = true;
  private closing: Promise<void> | null = null;

  constructor(files: readonly string[], opts: CheckpointerOptions) {
    this.closeTimeoutMs = opts.closeTimeoutMs ?? 5_000;
    this.onError = (err, file) => {
      try {
        opts.onError(err, file);
      } catch {
        // A failing logger must not take the gateway down either.
      }
    };
    this.worker = new Worker(WORKER_BODY, {
      eval: true,
      execArgv: [],
      workerData: {
        files: files.map((f) => resolve(f)),
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        truncateAboveBytes: opts.truncateAboveBytes ?? WAL_TRUNCATE_ABOVE_BYTES,
        truncateTries: TRUNCATE_TRIES,
        catchUpPasses: CATCH_UP_PASSES,
        catchUpBytes: CATCH_UP_BYTES,
      },
    });
    this.worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      for (const e of reply.errors) {
        this.onError(Object.assign(new Error(`WAL checkpoint of ${e.file} failed: ${e.message}`), { code: e.code }), e.file);
      }
      for (const r of reply.results) {
        if (r.mode !== 'TRUNCATE') continue;
        try {
          opts.onTruncate?.(r);
        } catch {
          // As onError: the log must not take the gateway down.
        }
      }
      p?.resolve(reply.results);
    });
    this.worker.on('error', (err) => this.onError(err, null));
    this.worker.on('exit', (code) => {
      if (!this.closing) this.onError(new Error(`checkpoint worker exited (code ${code}); WAL files will grow until restart`), null);
      this.alive = false;
      clearInterval(this.timer);
      for (const p of this.pending.values()) p.reject(new Error('checkpoint worker exited'));
      this.pending.clear();
    });
    // After the listeners: adding a 'message' listener refs the worker again.
    this.worker.unref();
    this.timer = setInterval(() => this.tick(), opts.intervalMs ?? 1_000);
    this.timer.unref();
  }

  /** False once the worker thread has exited (after close(), or if it failed). */
  get running(): boolean {
    return this.alive;
  }

  /**
   * Checkpoint every file now; resolves with what SQLite reported (failures go to onError).
   * Unlike the timer's checkpoints, this one keeps the process alive until it is answered.
   */
  checkpoint(): Promise<CheckpointResult[]> {
    return this.request(false, true);
  }

  /**
   * Stop the timer, run one last checkpoint (closing the worker's connections) and end the
   * worker. Bounded by closeTimeoutMs; never rejects. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      if (!this.alive) return;
      // The final checkpoint keeps the process alive, but never longer than the bound.
      let timeout: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        this.request(true, true).then(
          () => true,
          (err: Error) => (this.onError(err, null), true),
        ),
        new Promise<false>((r) => (timeout = setTimeout(() => r(false), this.closeTimeoutMs))),
      ]);
      clearTimeout(timeout);
      if (finished) {
        await this.worker.terminate(); // resolves after 'exit', which clears `running`
      } else {
        // Stuck in a native call: terminate() would wait for it. Let the unref'd thread go.
        this.worker.unref();
        this.onError(new Error(`final WAL checkpoint did not finish within ${this.closeTimeoutMs} ms; abandoned`), null);
        void this.worker.terminate().catch(() => {});
      }
    })();
    return this.closing;
  }

  private tick(): void {
    if (this.inFlight || this.closing) return;
    this.inFlight = true;
    this.request(false, false)
      .catch((err: Error) => this.onError(err, null))
      .finally(() => (this.inFlight = false));
  }

  private request(last: boolean, hold: boolean): Promise<CheckpointResult[]> {
    if (!this.alive) return Promise.reject(new Error('checkpoint worker is not running'));
    const id = this.nextId++;
    if (hold && this.held++ === 0) this.worker.ref();
    const answered = new Promise<CheckpointResult[]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, last });
    });
    if (!hold) return answered;
    const release = () => {
      if (--this.held === 0) this.worker.unref();
    };
    return answered.then(
      (r) => (release(), r),
      (err: unknown) => {
        release();
        throw err;
      },
    );
  }
}
