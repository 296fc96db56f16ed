/**
 * `ingest import FILES... --db DIR --cluster redis://HOST:PORT --shared-dir SHARED [--task-size SIZE]
 * [--reduce-tasks R]`: the import built by `ingest worker` processes (src/ingest/distributed/
 * coordinator.ts), then landed here as ONE checked ingestion of all its SSTs (the pipeline of
 * `import --db` with prebuilt files: one conflict check at one snapshot, one policy, one manifest
 * edit), with the same summary, report, exit codes and space policy. docs/distributed.md.
 *
 * Running the same command again after a kill resumes the import: the finished tasks are in
 * Redis, their files in SHARED. Its files there and its jobs go once it has landed, or has failed
 * on its input (exit 2) or its conflicts (exit 3).
 */
import * as fs from 'fs';
import * as path from 'path';
import { DbImport, conflictFailure } from '../../src/ingest/importIntoDb';
import { Progress } from '../../src/ingest/progress';
import { dbImportJson } from '../../src/ingest/importJson';
import { IngestError } from '../../src/util/errors';
import { normalizeDialect } from '../../src/ingest/csv/csvDialect';
import { settleValueEncoding } from '../../src/ingest/valueEncodingFile';
import { spacePolicyOf } from '../../src/ingest/spacePolicy';
import type { DistributedImport } from '../../src/ingest/distributed/coordinator';
import { ClusterCliOptions, DbImportCliOptions, dbImportOptionsOf } from './importOptions';
import { buildOnCluster, keepsTasks } from './clusterBuild';
import { printImportResult } from './importOutput';
import { withFinalEvent } from './progressEvents';
import { runInterruptible } from './interrupt';

export async function runClusterImport(
  inputs: string[],
  o: DbImportCliOptions & ClusterCliOptions,
  mode: 'plan' | 'import',
): Promise<void> {
  const { options, codec } = dbImportOptionsOf(inputs, o, mode);
  const settled = settleValueEncoding(o.db, options.import.valueFormat, normalizeDialect(options.import.dialect ?? {}));
  // Row origins (for the report's file and line), as `import --db` writes them: not into a
  // database this run creates, where nothing can conflict (they cost the merge ~4 bytes a row).
  const creating = !fs.existsSync(path.join(o.db, 'CURRENT'));
  const importOptions = { ...options.import, valueFormat: settled.format, valueSyntax: settled.syntax, writeRowOrigins: !creating };
  const progress = Progress.forOption(o.progress, o.quiet === true);
  await withFinalEvent(progress, async () => {
    // The phases as progress: bytes of the tasks done of the phase's whole (map: input, reduce: runs).
    const distributed = await buildOnCluster(o, importOptions, (phase, _done, _total, bytesDone, bytesTotal) =>
      progress.update({ phase, doneBytes: bytesDone, totalBytes: bytesTotal, rows: 0, totalRows: null }),
    );
    return landed(distributed, o, mode, { ...options, import: { ...importOptions, progress } }, codec);
  });
}

/** The checked ingestion of the distributed import's SSTs; its files go afterwards unless a rerun could use them. */
async function landed(
  distributed: DistributedImport,
  o: DbImportCliOptions,
  mode: 'plan' | 'import',
  options: ReturnType<typeof dbImportOptionsOf>['options'],
  codec: ReturnType<typeof dbImportOptionsOf>['codec'],
): Promise<{ doc: unknown; failure: IngestError | null }> {
  let keep = false;
  try {
    const job = new DbImport({
      ...options,
      mode,
      prebuilt: distributed.summary,
      // Written and fsynced by the import's own workers, read whole by the check.
      verifyChecksums: o.verifyChecksums ?? false,
      space: spacePolicyOf(o.maxSpaceAmp, o.compactBudget),
    });
    const result = await runInterruptible(job, 'the distributed import stays in the cluster: run the same command again to land it');
    result.distributed = { importId: distributed.importId, ...distributed.phases };
    printImportResult(result, o, codec, false);
    return { doc: dbImportJson(result), failure: conflictFailure(result) };
  } catch (e) {
    keep = keepsTasks(e);
    throw e;
  } finally {
    if (!keep) await distributed.remove();
  }
}
