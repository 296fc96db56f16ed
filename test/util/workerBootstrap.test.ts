/**
 * startModuleWorker (src/util/workerBootstrap.ts): a TypeScript module runs in a worker under the
 * tests, and `niceness` lowers that worker thread's priority only, not the process's main thread.
 */
import * as path from 'path';
import { Worker } from 'worker_threads';
import { startModuleWorker } from '../../src/util/workerBootstrap';

function reply(w: Worker): Promise<{ priority: number; processPriority: number }> {
  return new Promise((resolve, reject) => {
    w.once('message', (m: { priority: number; processPriority: number }) => {
      resolve(m);
      void w.terminate();
    });
    w.once('error', reject);
  });
}

const caller = path.join(__dirname, 'fixtures', 'caller.ts');
const linux = process.platform === 'linux';

(linux ? describe : describe.skip)('startModuleWorker', () => {
  it('runs a worker at normal priority by default', async () => {
    expect((await reply(startModuleWorker(caller, 'reportPriority', {}))).priority).toBe(0);
  });

  it('lowers the worker thread alone by the niceness asked for', async () => {
    const r = await reply(startModuleWorker(caller, 'reportPriority', {}, { niceness: 7 }));
    expect(r.priority).toBe(7);
    expect(r.processPriority).toBe(0); // the main thread keeps its priority
  });

  it('refuses a niceness outside 0..19', () => {
    expect(() => startModuleWorker(caller, 'reportPriority', {}, { niceness: 20 })).toThrow(/0\.\.19/);
  });
});
