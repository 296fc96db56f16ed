/**
 * Starts a worker thread on one of our modules, compiled or not.
 *
 * From dist/ the module is plain JavaScript and the worker simply requires it. Under the tests
 * the code runs from TypeScript sources through @swc/jest, which does not reach into worker
 * threads; so when the entry is a `.ts` file, the worker first installs a small require hook that
 * compiles each `.ts` module with @swc/core's transformSync (a devDependency, present wherever
 * the sources are run). Production never takes that path.
 */
import * as path from 'path';
import { Worker } from 'worker_threads';

const BOOTSTRAP = `
const { workerData } = require('worker_threads');
const entry = workerData.__entry;
if (entry.endsWith('.ts')) {
  const fs = require('fs');
  const swc = require(workerData.__swc);
  require.extensions['.ts'] = function (module, filename) {
    const out = swc.transformSync(fs.readFileSync(filename, 'utf8'), {
      filename,
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
      sourceMaps: 'inline',
    });
    module._compile(out.code, filename);
  };
}
require(entry);
`;

/**
 * Starts `moduleBaseName` (a file beside the caller's own module, without extension) in a worker.
 * `callerFile` is the caller's __filename: its extension says whether we run compiled.
 */
export function startModuleWorker(callerFile: string, moduleBaseName: string, data: object): Worker {
  const ext = path.extname(callerFile);
  const entry = path.join(path.dirname(callerFile), `${moduleBaseName}${ext}`);
  const workerData: Record<string, unknown> = { ...data, __entry: entry };
  if (ext === '.ts') workerData.__swc = require.resolve('@swc/core');
  return new Worker(BOOTSTRAP, { eval: true, workerData });
}
