/**
 * Starts a worker thread on one of our modules, compiled or not.
 *
 * From dist/ the module is plain JavaScript and the worker simply requires it. Under the tests
 * the code runs from TypeScript sources through @swc/jest, which does not reach into worker
 * threads; so when the entry is a `.ts` file, the worker first installs a small require hook that
 * compiles each `.ts` module with @swc/core's transformSync (a devDependency, present wherever
 * the sources are run), keeping the output in <tmp>/sst-ingest-swc-cache/ by a hash of path and
 * contents, as test/support/swc-register.js does, so each test's workers compile a module once.
 * Production never takes that path.
 *
 * Niceness: with `niceness` > 0 the worker lowers its own thread's CPU priority (Linux
 * setpriority on the thread id from /proc/thread-self) before it loads its module, so a process
 * serving requests on its main thread keeps the CPU whenever it wants it, and the worker takes
 * the rest (RocksDB lowers its compaction threads' priority the same way). Threads the worker
 * starts inherit the value. Where the kernel or platform says no, the worker runs at normal
 * priority: it is a scheduling hint, never a failure.
 *
 * At the lowest niceness (MAX_NICENESS, what a live import asks for) the thread also moves to
 * Linux's SCHED_IDLE class, through util-linux's `chrt --idle` on its thread id: a nice-19
 * thread still keeps a core for a scheduler slice when the serving thread wakes up, and a
 * server answering small requests one after another wakes up thousands of times a second.
 * Measured by bench:serve (a client writer while 300k rows land through the server): 19-25%
 * of the writer's idle rate at nice 19 alone, 57-74% with SCHED_IDLE; the import took twice as
 * long, as it should: it runs on what the server leaves. Node has no call for it; where chrt is
 * missing the worker keeps niceness alone.
 */
import * as path from 'path';
import { Worker } from 'worker_threads';

/** Linux's lowest priority. */
export const MAX_NICENESS = 19;

const BOOTSTRAP = `
const { workerData } = require('worker_threads');
const entry = workerData.__entry;
if (workerData.__niceness > 0) {
  try {
    const tid = Number(require('fs').readlinkSync('/proc/thread-self').split('/').pop());
    require('os').setPriority(tid, workerData.__niceness);
    if (workerData.__niceness >= ${MAX_NICENESS}) {
      require('child_process').execFileSync('chrt', ['--idle', '-p', '0', String(tid)], { stdio: 'ignore', timeout: 2000 });
    }
  } catch (e) {
    // Not Linux, or not allowed: stay at normal priority.
  }
}
if (entry.endsWith('.ts')) {
  const fs = require('fs');
  const path = require('path');
  const crypto = require('crypto');
  const cacheDir = path.join(require('os').tmpdir(), 'sst-ingest-swc-cache');
  const swc = require(workerData.__swc);
  require.extensions['.ts'] = function (module, filename) {
    const source = fs.readFileSync(filename, 'utf8');
    const cached = path.join(cacheDir, crypto.createHash('sha1').update(filename).update('\\0').update(source).digest('hex') + '.js');
    let code = null;
    try {
      code = fs.readFileSync(cached, 'utf8');
    } catch (e) {
      // Not compiled yet.
    }
    if (code === null) {
      code = swc.transformSync(source, {
        filename,
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      }).code;
      try {
        fs.mkdirSync(cacheDir, { recursive: true });
        const temp = cached + '.' + process.pid + '.' + Math.random().toString(16).slice(2) + '.tmp';
        fs.writeFileSync(temp, code);
        fs.renameSync(temp, cached);
      } catch (e) {
        // No cache: compile again next time.
      }
    }
    module._compile(code, filename);
  };
}
require(entry);
`;

export interface WorkerStartOptions {
  /** Lower the worker thread's CPU priority by this much (0 = normal; see the module comment). */
  niceness?: number;
}

/**
 * Starts `moduleBaseName` (a file beside the caller's own module, without extension) in a worker.
 * `callerFile` is the caller's __filename: its extension says whether we run compiled.
 */
export function startModuleWorker(callerFile: string, moduleBaseName: string, data: object, opts: WorkerStartOptions = {}): Worker {
  const ext = path.extname(callerFile);
  const entry = path.join(path.dirname(callerFile), `${moduleBaseName}${ext}`);
  const niceness = opts.niceness ?? 0;
  if (!Number.isInteger(niceness) || niceness < 0 || niceness > MAX_NICENESS)
    throw new RangeError(`worker niceness must be an integer in 0..${MAX_NICENESS}, got ${niceness}`);
  const workerData: Record<string, unknown> = { ...data, __entry: entry, __niceness: niceness };
  if (ext === '.ts') workerData.__swc = require.resolve('@swc/core');
  return new Worker(BOOTSTRAP, { eval: true, workerData });
}
