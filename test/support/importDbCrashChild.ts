/**
 * Child process for the import crash test (test/ingest/importIntoDbCrash.test.ts): runs the whole
 * `import --db` pipeline (importIntoDb: parse, sort, merge into SSTs in a scratch directory,
 * open, conflict check, ingest) of the CSV argv[3] into the database argv[2], with sorted runs
 * under argv[4] and --on-conflict overwrite. Prints "ready" once its modules are loaded (the
 * parent times its kill from there) and "done" when the import returned. The parent kills it
 * with SIGKILL at a random moment.
 */
import { importIntoDb } from '../../src/ingest/importIntoDb';

async function main(): Promise<void> {
  const [dbDir, csvPath, runsDir] = process.argv.slice(2);
  process.stdout.write('ready\n');
  await importIntoDb({
    dbDir,
    onConflict: 'overwrite',
    import: {
      inputs: [csvPath],
      header: true,
      key: '1',
      tmpDir: runsDir,
      // Small files and a small sort buffer: several SSTs per import (one ingestion of many
      // files) and sorted runs spilled to disk, so kills land in every step.
      targetFileSizeBytes: 16 * 1024,
      memoryLimitBytes: 4 << 20,
    },
  });
  process.stdout.write('done\n');
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
