/**
 * The build half of a distributed import, shared by `import --db --cluster` (importCluster.ts)
 * and `import --server --cluster` (importRemote.ts): the options checked, the coordinator
 * (src/ingest/distributed/coordinator.ts, loaded only here) run under the interrupt handler, and
 * which failures keep the import's tasks for a rerun of the same command.
 */
import type { DistributedImport, DistributedImportOptions } from '../../src/ingest/distributed/coordinator';
import { IngestError } from '../../src/util/errors';
import { ClusterCliOptions, parseByteSize } from './importOptions';
import { runInterruptible } from './interrupt';

/** Errors after which a distributed import's tasks are worth keeping: a rerun of the same command can use them. */
const KEEPS_TASKS: ReadonlySet<string> = new Set(['INTERRUPTED', 'IO', 'NO_SPACE', 'INTERNAL', 'DB_LOCKED', 'UNAVAILABLE', 'BUSY']);

export function keepsTasks(e: unknown): boolean {
  return e instanceof IngestError && KEEPS_TASKS.has(e.code);
}

function reduceTasksOf(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 4096) throw new IngestError('USAGE', `--reduce-tasks must be an integer 1..4096, got "${text}"`);
  return n;
}

/** Runs the import on the cluster (`o.cluster`, `o.sharedDir`); Ctrl-C leaves it in the cluster for a rerun. */
export async function buildOnCluster(
  o: ClusterCliOptions,
  importOptions: DistributedImportOptions['import'],
  onTasks?: DistributedImportOptions['onTasks'],
): Promise<DistributedImport> {
  if (o.sharedDir === undefined) throw new IngestError('USAGE', '--cluster needs --shared-dir DIR (a directory every worker sees)');
  const options: DistributedImportOptions = {
    clusterUrl: o.cluster as string,
    sharedDir: o.sharedDir,
    import: importOptions,
    taskBytes: o.taskSize === undefined ? undefined : parseByteSize(o.taskSize, '--task-size'),
    reduceTasks: o.reduceTasks === undefined ? undefined : reduceTasksOf(o.reduceTasks),
    onTasks,
  };
  const { runDistributedImport } = await import('../../src/ingest/distributed/coordinator');
  return runInterruptible(
    { run: () => runDistributedImport(options), cleanupSync: () => undefined },
    'the distributed import stays in the cluster: run the same command again to resume it',
  );
}
