/**
 * startModuleWorker (src/util/workerBootstrap.ts): a TypeScript module runs in a worker under the
 * tests, and `niceness` lowers that worker thread's priority only, not the process's main thread;
 * the lowest niceness also puts it in SCHED_IDLE (.ci/run installs util-linux's chrt for it).
 */
import * as path from 'path';
import { Worker } from 'worker_threads';
import { startModuleWorker } from '../../src/util/workerBootstrap';

interface PriorityReply {
  priority: number;
  processPriority: number;
  policy: number;
  processPolicy: number;
}

const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

function reply(w: Worker): Promise<PriorityReply> {
  return new Promise((resolve, reject) => {
    w.once('message', (m: PriorityReply) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
}

const caller = path.join(__dirname, 'fixtures', 'caller.ts');
// Thread priorities and scheduling policies are read from Linux's /proc (test/util/fixtures/reportPriority.ts).
const linux = process.platform === 'linux';
const suiteName = linux ? 'startModuleWorker' : 'startModuleWorker [skipped: thread priorities are read from Linux /proc]';

(linux ? describe : describe.skip)(suiteName, () => {
  it('runs a worker at normal priority by default', async () => {
    expect((await reply(startModuleWorker(caller, 'reportPriority', {}))).priority).toBe(0);
  });

  it('lowers the worker thread alone by the niceness asked for', async () => {
    const r = await reply(startModuleWorker(caller, 'reportPriority', {}, { niceness: 7 }));
    expect(r.priority).toBe(7);
    expect(r.processPriority).toBe(0); // the main thread keeps its priority
    expect(r.policy).toBe(SCHED_OTHER);
  });

  it('moves a worker at the lowest niceness to SCHED_IDLE, the main thread staying as it is', async () => {
    const r = await reply(startModuleWorker(caller, 'reportPriority', {}, { niceness: 19 }));
    expect(r.priority).toBe(19);
    expect(r.policy).toBe(SCHED_IDLE);
    expect(r.processPolicy).toBe(SCHED_OTHER);
  });

  it('refuses a niceness outside 0..19', () => {
    expect(() => startModuleWorker(caller, 'reportPriority', {}, { niceness: 20 })).toThrow(/0\.\.19/);
  });
});
