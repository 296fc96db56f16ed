/**
 * A full disk is a clean stop (issue 15): ENOSPC while spilling runs, while writing SSTs and
 * while ingesting gives NO_SPACE naming the directory and what the import was doing (exit 1),
 * leaves the database exactly as it was, and once space is freed the same import resumes and
 * completes with the uninterrupted result.
 *
 * The small disks are tmpfs file systems this test mounts itself (with a size; it needs root,
 * which CI has, as it installs packages) and grows with `mount -o remount,size=` to "free space".
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { randomBytes } from 'crypto';
import { Engine } from '../../src/engine/engine';
import { DbImport } from '../../src/ingest/importIntoDb';
import { IngestError } from '../../src/util/errors';
import { CompressionType } from '../../src/sstable/compression';
import { runCli } from '../support/cli';
import { tempDir } from './support';
import { dbContents } from '../support/dbContents';

jest.setTimeout(120_000);

const ROWS = 30_000;
const mounts: string[] = [];

function mountTmpfs(dir: string, sizeKiB: number): void {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir]);
  mounts.push(dir);
}

/** "Frees space": the file system grows, its files stay. */
function growTmpfs(dir: string, sizeKiB: number): void {
  execFileSync('mount', ['-o', `remount,size=${sizeKiB}k`, dir]);
}

// Each test's disks go after it, before the temp directories holding them are removed.
afterEach(() => {
  for (const dir of mounts.splice(0).reverse()) execFileSync('umount', ['-l', dir]);
});

function writeInput(file: string): void {
  const lines = ['id,name,note'];
  for (let i = 0; i < ROWS; i++) {
    const id = (i * 7919 + 3) % 1_000_003;
    lines.push(`${id},name-${id % 977},note ${(id * 2654435761) % 4294967296} for row ${id}`);
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

function importArgs(input: string, db: string, extra: string[] = []): string[] {
  // Inputs far under --step-checkpoints-from's default would be checkpointed at their end only.
  const settings = '--header --key id:int64 --compression none --threads 2 --memory-limit 8MiB --step-checkpoints-from 0 --json --quiet';
  return ['import', input, '--db', db, ...settings.split(' '), ...extra];
}

/** A database holding a few rows below the import's keys, so "unchanged" has something to compare. */
async function seedDb(dir: string): Promise<string[]> {
  const seed = path.join(path.dirname(dir), `${path.basename(dir)}-seed.csv`);
  fs.writeFileSync(seed, 'id,name,note\n1,a,seed\n2,b,seed\n');
  const r = await runCli('import', seed, '--header', '--key', 'id:int64', '--db', dir, '--quiet');
  expect(r.code).toBe(0);
  return dbContents(dir);
}

let root = '';
let input = '';
let expected: string[] = [];
/** The import's own entries (expected without the seed rows). */
let importOnly: string[] = [];
/** Bytes of the import's SSTs (uncompressed): what the ingest test leaves room for. */
let sstBytes = 0;

beforeAll(async () => {
  root = tempDir('disk-full-');
  input = path.join(root, 'input.csv');
  writeInput(input);
  const db = path.join(root, 'baseline');
  const seeded = await seedDb(db);
  const r = await runCli(...importArgs(input, db));
  expect(r.code).toBe(0);
  sstBytes = (JSON.parse(r.stdout) as { import: { outputFiles: { fileSizeBytes: number }[] } }).import.outputFiles.reduce(
    (a, f) => a + f.fileSizeBytes,
    0,
  );
  expected = await dbContents(db);
  expect(expected).toHaveLength(ROWS + 2);
  importOnly = expected.filter((e) => !seeded.includes(e));
});

test('ENOSPC while spilling sorted runs: NO_SPACE naming the run directory, the database unchanged, resumed once space is freed', async () => {
  const db = path.join(root, 'db-spill');
  const before = await seedDb(db);
  const small = path.join(root, 'runs-disk');
  mountTmpfs(small, 1024);
  const r = await runCli(...importArgs(input, db, ['--tmp-dir', small]));
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    new RegExp(`no space left in ${small}/ingest-job-[0-9a-f]+ while parsing and spilling sorted runs; about [0-9.]+ MiB more are needed`),
  );
  expect(r.stderr).toContain('run the same command again to resume');
  expect(await dbContents(db)).toEqual(before);
  growTmpfs(small, 64 << 10);
  const resumed = await runCli(...importArgs(input, db, ['--tmp-dir', small]));
  expect(resumed.code).toBe(0);
  expect(JSON.parse(resumed.stdout).import.resume.resumed).toBe(true);
  expect(await dbContents(db)).toEqual(expected);
});

test('ENOSPC while writing SSTs: NO_SPACE naming the database directory, the database unchanged, resumed once space is freed', async () => {
  const disk = path.join(root, 'sst-disk');
  mountTmpfs(disk, 1024);
  const db = path.join(disk, 'db');
  const before = await seedDb(db);
  const runs = path.join(root, 'sst-runs');
  const r = await runCli(...importArgs(input, db, ['--tmp-dir', runs]));
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(new RegExp(`no space left in ${db}/\\.import-job-[0-9a-f]+ while merging the runs into SSTs`));
  expect(await dbContents(db)).toEqual(before);
  growTmpfs(disk, 64 << 10);
  const resumed = await runCli(...importArgs(input, db, ['--tmp-dir', runs]));
  expect(resumed.code).toBe(0);
  const resume = JSON.parse(resumed.stdout).import.resume;
  expect(resume).toMatchObject({ resumed: true, resumedFromPhase: 'merge' });
  expect(await dbContents(db)).toEqual(expected);
});

test('ENOSPC while ingesting (the memtable flush it needs): NO_SPACE, the live database unchanged and serving, resumed once space is freed', async () => {
  const disk = path.join(root, 'ingest-disk');
  mountTmpfs(disk, 8 << 10);
  const db = path.join(disk, 'db');
  await seedDb(db);
  const engine = await Engine.open(db);
  try {
    // Unflushed writes inside the import's span: the ingestion must flush them first.
    // Incompressible values: the flush writes about what it holds (~1.8 MB).
    for (let i = 0; i < 2_000; i++) await engine.put(Buffer.from(`8000000000${String(i).padStart(6, '0')}`, 'hex'), randomBytes(900));
    const before = await dbContents(db, engine);
    const runs = path.join(root, 'ingest-runs');
    const options = {
      dbDir: db,
      engine,
      resume: true,
      onConflict: 'overwrite' as const,
      import: {
        inputs: [input],
        header: true,
        key: 'id:int64',
        tmpDir: runs,
        sstOptions: { compression: CompressionType.None },
        memoryLimitBytes: 8 << 20,
      },
    };
    // Fill the disk up to what the SSTs need, so the flush is what finds it full.
    const filler = path.join(disk, 'filler');
    const freeNow = fs.statfsSync(disk).bavail * fs.statfsSync(disk).bsize;
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, freeNow - sstBytes - (512 << 10))));
    const failure = await new DbImport(options).run().then(
      () => null,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(IngestError);
    expect((failure as IngestError).code).toBe('NO_SPACE');
    expect((failure as IngestError).message).toContain(`no space left in ${db} while ingesting`);
    // Reads go on; writes wait for space (RocksDB's read-only state after a failed flush).
    expect(await dbContents(db, engine)).toEqual(before);
    await expect(engine.put(Buffer.from('ff', 'hex'), Buffer.from('x'))).rejects.toMatchObject({
      code: 'NO_SPACE',
      message: expect.stringContaining('is out of disk space and takes no writes until space is freed and it resumes'),
    });
    fs.rmSync(filler);
    await engine.resume();
    await engine.put(Buffer.from('ff', 'hex'), Buffer.from('serving again'));
    expect(engine.get(Buffer.from('ff', 'hex'))?.toString()).toBe('serving again');
    const result = await new DbImport(options).run();
    expect(result.import.resume).toMatchObject({ resumed: true, resumedFromPhase: 'ingesting' });
    expect(result.ingest).not.toBeNull();
    // The live rows, then the import over them (overwrite), then the write made after resume().
    const merged = new Map<string, string>();
    for (const e of [...before, ...importOnly, `ff=${Buffer.from('serving again').toString('hex')}`]) merged.set(e.split('=')[0], e);
    const want = [...merged.keys()].sort().map((k) => merged.get(k) as string);
    expect(await dbContents(db, engine)).toEqual(want);
  } finally {
    await engine.close();
  }
});
