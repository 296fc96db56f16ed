/**
 * Whether `import --db` re-reads its own SSTs before ingesting them (DbImportOptions
 * verifyChecksums): by default it does not (the files were checksummed as written, fsynced, and
 * read whole by the conflict scan), with verifyChecksums: true it reads every data block once
 * more, and prebuilt files (which come from outside) are verified by default. Measured through
 * the perf context's block bytes read, which the verification counts like any read: the run with
 * verification reads at least the SSTs' data blocks once more.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { importIntoDb, DbImportOptions } from '../../src/ingest/importIntoDb';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { perf, resetPerfContext } from '../../src/base/perfContext';
import { FIXTURES_DIR } from '../support/paths';

const IMPORT: DbImportOptions['import'] = {
  inputs: [path.join(FIXTURES_DIR, 'trades.csv')],
  dialect: { delimiter: '|' },
  header: true,
  key: 't_id:int64',
  // On the main thread, where the perf context counts: no workers.
  parseThreads: 0,
};

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-verify-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

async function dataBlocksReadBy(name: string, verifyChecksums: boolean | undefined): Promise<{ bytesRead: number; dataBytes: number }> {
  resetPerfContext();
  const r = await importIntoDb({ dbDir: path.join(root, name), import: IMPORT, verifyChecksums });
  const bytesRead = perf.blockBytesRead;
  expect(r.ingest?.files.length).toBeGreaterThan(0);
  let dataBytes = 0;
  for (const f of r.ingest?.files ?? []) {
    const reader = TableReader.open(path.join(root, name, `${String(f.fileNumber).padStart(6, '0')}.sst`));
    dataBytes += reader.properties.dataSize;
    reader.close();
  }
  return { bytesRead, dataBytes };
}

test('an import does not re-read the SSTs it wrote, unless asked to', async () => {
  const plain = await dataBlocksReadBy('plain', undefined);
  const verified = await dataBlocksReadBy('verified', true);
  expect(plain.dataBytes).toBeGreaterThan(100_000);
  expect(verified.dataBytes).toBe(plain.dataBytes);
  expect(verified.bytesRead - plain.bytesRead).toBeGreaterThanOrEqual(plain.dataBytes);
});
