/**
 * The native merge (src/ingest/sort/nativeMerge.ts over native/mergeBlocks.c) against the
 * JavaScript merge (mergeToSsts.ts with SST_INGEST_NATIVE_MERGE=0): for the same runs, options,
 * policy, key range and resume hooks, the files must be byte-identical and the results equal.
 * The inputs are built to reach every stop of the native loop: read buffers smaller than one
 * entry (refills, and buffers that grow), values larger than the block output and keys larger
 * than the key slots (NEED_ROOM), tiny blocks (many entries per restart array) and tiny target
 * files (cuts), keys of every XXPH3 length class, and duplicates across runs. Then XXPH3 itself,
 * and the errors a damaged run gives. (The data blocks alone, against BlockBuilder's, are
 * test/ingest/sort/nativeDataBlock.test.ts.)
 *
 * Without the native addon these suites skip, or fail under SST_INGEST_REQUIRE_NATIVE=1
 * (test/support/native.ts).
 */
import * as fs from 'fs';
import * as path from 'path';
import { FIRST_ENTRY_OFFSET, RunInfo, RunWriter } from '../../../src/ingest/sort/runFile';
import { DuplicatePolicy, MergeCheckpoint, MergeResult, mergeRunsIntoSsts } from '../../../src/ingest/sort/mergeToSsts';
import { canMergeNatively } from '../../../src/ingest/sort/nativeMerge';
import { SstSetWriter, WrittenFile } from '../../../src/ingest/sort/sstSetWriter';
import { SstFileWriterOptions } from '../../../src/sstwriter/sstFileWriter';
import { CompressionType } from '../../../src/sstable/compression';
import { nativeBlockCodec } from '../../../src/sstable/nativeBlockCodec';
import { xxph3, xxph3Result } from '../../../src/sstable/hash';
import { xxph3Reference } from '../../support/xxph3Reference';
import { mulberry32 } from '../../../src/util/random';
import { IngestError } from '../../../src/util/errors';
import { tempDir } from '../support';
import { describeIfNative } from '../../support/native';

interface Row {
  key: Buffer;
  value: Buffer;
  source: number;
  line: number;
}

/** Keys of many lengths (1 to 300 bytes: every XXPH3 class), sharing prefixes, some repeated. */
function makeRows(seed: number, count: number, bigValues: boolean, smallValues = false): Row[] {
  const r = mulberry32(seed);
  const rows: Row[] = [];
  const prefixes = ['', 'acct/', 'acct/0001/', 'z'.repeat(20)];
  for (let i = 0; i < count; i++) {
    let key: Buffer;
    if (i > 0 && r() < 0.1) key = rows[Math.floor(r() * rows.length)].key;
    else if (smallValues) key = Buffer.concat([Buffer.from('acct/0001/'), Buffer.from([0, 1, 2, 3].map(() => Math.floor(r() * 256)))]);
    else {
      const lengthClass = r();
      const tail =
        lengthClass < 0.6 ? 1 + Math.floor(r() * 16) : lengthClass < 0.9 ? 17 + Math.floor(r() * 120) : 129 + Math.floor(r() * 172);
      const bytes = Buffer.alloc(tail);
      for (let j = 0; j < tail; j++) bytes[j] = r() < 0.2 ? 0 : Math.floor(r() * 256);
      key = Buffer.concat([Buffer.from(prefixes[Math.floor(r() * prefixes.length)]), bytes]);
    }
    const valueBytes = smallValues ? Math.floor(r() * 4) : bigValues && r() < 0.01 ? 5000 + Math.floor(r() * 20000) : Math.floor(r() * 200);
    const value = Buffer.alloc(valueBytes, 97 + (i % 26));
    rows.push({ key, value, source: Math.floor(r() * 3), line: i + 1 });
  }
  return rows;
}

function compareRows(a: Row, b: Row): number {
  return Buffer.compare(a.key, b.key) || a.source - b.source || a.line - b.line;
}

function writeRuns(dir: string, rows: Row[], runCount: number, seed: number): RunInfo[] {
  const r = mulberry32(seed);
  const groups: Row[][] = Array.from({ length: runCount }, () => []);
  for (const row of rows) groups[Math.floor(r() * runCount)].push(row);
  return groups.map((g, i) => {
    g.sort(compareRows);
    const w = new RunWriter(path.join(dir, `r${i}.run`));
    for (const row of g) w.add(Buffer.concat([row.key, row.value]), 0, row.key.length, row.value.length, row.source, row.line);
    return w.finish();
  });
}

interface Case {
  policy: DuplicatePolicy;
  runs: number;
  readBufferBytes: number;
  targetFileSizeBytes: number;
  options: Partial<SstFileWriterOptions>;
  bigValues: boolean;
  /** Merge the key range between the 30th and 70th percentile keys only. */
  ranged: boolean;
  resumable: boolean;
  /** Values of 0-3 bytes and keys sharing long prefixes: entries of a dozen bytes. */
  smallValues?: boolean;
}

interface Outcome {
  result: MergeResult;
  files: Array<Omit<WrittenFile, 'tempPath'> & { bytes: string }>;
  checkpoints: Array<{ file: string; upTo: MergeCheckpoint }>;
}

/** One merge of `runs` into `dir`, natively or not; files read back and removed. */
function mergeOnce(c: Case, runs: RunInfo[], dir: string, native: boolean, bounds: { low: Buffer; high: Buffer } | null): Outcome {
  const saved = process.env.SST_INGEST_NATIVE_MERGE;
  process.env.SST_INGEST_NATIVE_MERGE = native ? '1' : '0';
  try {
    const out = new SstSetWriter(dir, native ? 'native' : 'js', 0, c.targetFileSizeBytes, c.options);
    expect(canMergeNatively(c.policy, out)).toBe(native);
    const checkpoints: Outcome['checkpoints'] = [];
    const hooks = c.resumable
      ? {
          initial: { rowsWritten: 7, duplicateCount: 2, duplicates: [] },
          onFileFinished: (f: WrittenFile, upTo: MergeCheckpoint) =>
            checkpoints.push({ file: path.basename(f.tempPath).replace(/^.*-p0-/, ''), upTo }),
        }
      : undefined;
    // A range, even an unbounded one, keeps the runs for the other path (without one the merge deletes them).
    const range = { low: bounds?.low ?? null, high: bounds?.high ?? null, startOffsets: runs.map(() => FIRST_ENTRY_OFFSET) };
    const result = mergeRunsIntoSsts(runs, c.policy, out, c.readBufferBytes, undefined, range, hooks);
    const written = c.policy === 'error' && result.duplicateCount > 0 ? [] : out.finish();
    const files = written.map((f) => {
      const bytes = fs.readFileSync(f.tempPath).toString('hex');
      fs.rmSync(f.tempPath);
      const { tempPath, ...rest } = f;
      expect(tempPath).toContain(native ? 'native' : 'js');
      return { ...rest, smallestUserKey: Buffer.from(rest.smallestUserKey), largestUserKey: Buffer.from(rest.largestUserKey), bytes };
    });
    out.abort();
    return { result, files, checkpoints };
  } finally {
    if (saved === undefined) delete process.env.SST_INGEST_NATIVE_MERGE;
    else process.env.SST_INGEST_NATIVE_MERGE = saved;
  }
}

const BASE_OPTIONS: Partial<SstFileWriterOptions> = {
  backgroundCompression: false,
  dbSessionId: 'NATIVEMERGETEST00000',
  compression: CompressionType.None,
};

const CASES: Array<[string, Case]> = [
  [
    'first, 5 runs, tiny read buffers, tiny blocks and files',
    {
      policy: 'first',
      runs: 5,
      readBufferBytes: 64,
      targetFileSizeBytes: 6000,
      options: { ...BASE_OPTIONS, blockSizeBytes: 128 },
      bigValues: false,
      ranged: false,
      resumable: false,
    },
  ],
  [
    'first, 3 runs, LZ4, default blocks, big values',
    {
      policy: 'first',
      runs: 3,
      readBufferBytes: 1000,
      targetFileSizeBytes: 40000,
      options: { ...BASE_OPTIONS, compression: CompressionType.LZ4 },
      bigValues: true,
      ranged: false,
      resumable: false,
    },
  ],
  [
    'first, 1 run, no filter, restart interval 1',
    {
      policy: 'first',
      runs: 1,
      readBufferBytes: 4096,
      targetFileSizeBytes: 1 << 30,
      options: { ...BASE_OPTIONS, bloomBitsPerKey: 0, blockRestartInterval: 1, blockSizeBytes: 512 },
      bigValues: true,
      ranged: false,
      resumable: false,
    },
  ],
  [
    'first, 7 runs, a key range, resume hooks',
    {
      policy: 'first',
      runs: 7,
      readBufferBytes: 300,
      targetFileSizeBytes: 9000,
      options: { ...BASE_OPTIONS, blockSizeBytes: 700, blockSizeDeviationPercent: 50 },
      bigValues: false,
      ranged: true,
      resumable: true,
    },
  ],
  [
    'first, 2 runs, 64 KiB blocks of small entries (more entries than the arrays start with)',
    {
      policy: 'first',
      runs: 2,
      readBufferBytes: 2048,
      targetFileSizeBytes: 1 << 30,
      options: { ...BASE_OPTIONS, blockSizeBytes: 65536 },
      bigValues: false,
      ranged: false,
      resumable: false,
      smallValues: true,
    },
  ],
  [
    'error, 4 runs (duplicates: nothing written)',
    {
      policy: 'error',
      runs: 4,
      readBufferBytes: 200,
      targetFileSizeBytes: 5000,
      options: { ...BASE_OPTIONS, blockSizeBytes: 256 },
      bigValues: false,
      ranged: false,
      resumable: false,
    },
  ],
];

describeIfNative('the native merge', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('native-merge-test-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each(CASES)('writes the same files as the JavaScript merge: %s', (_name, c) => {
    const rows = makeRows(c.runs * 31 + c.readBufferBytes, c.smallValues === true ? 20000 : 3000, c.bigValues, c.smallValues);
    const runs = writeRuns(dir, rows, c.runs, c.runs);
    let bounds: { low: Buffer; high: Buffer } | null = null;
    if (c.ranged) {
      const keys = rows.map((r) => r.key).sort(Buffer.compare);
      bounds = { low: keys[Math.floor(keys.length * 0.3)], high: keys[Math.floor(keys.length * 0.7)] };
    }
    const js = mergeOnce(c, runs, dir, false, bounds);
    const native = mergeOnce(c, runs, dir, true, bounds);
    expect(native.result).toEqual(js.result);
    expect(native.checkpoints).toEqual(js.checkpoints);
    expect(native.files.length).toBe(js.files.length);
    native.files.forEach((f, i) => expect(f).toEqual(js.files[i]));
    // The cases do reach what they are built for.
    expect(js.result.duplicateCount).toBeGreaterThan(0);
    if (c.policy !== 'error') expect(js.files.length).toBeGreaterThan(c.targetFileSizeBytes < 1 << 20 ? 1 : 0);
    if (c.resumable) expect(js.checkpoints.length).toBeGreaterThan(0);
  });

  it('names the run file when a run ends inside an entry, on both paths', () => {
    const rows = makeRows(5, 500, false);
    const runs = writeRuns(dir, rows, 2, 2);
    const run = runs[1];
    fs.truncateSync(run.path, run.bytes - 3);
    for (const native of [false, true]) {
      const c: Case = {
        policy: 'first',
        runs: 2,
        readBufferBytes: 128,
        targetFileSizeBytes: 1 << 30,
        options: BASE_OPTIONS,
        bigValues: false,
        ranged: false,
        resumable: false,
      };
      let error: unknown = null;
      try {
        mergeOnce(c, runs, dir, native, null);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(IngestError);
      expect((error as IngestError).code).toBe('IO');
      expect((error as Error).message).toContain(run.path);
      expect((error as Error).message).toMatch(/truncated|ended after/);
    }
  });
});

describeIfNative('native XXPH3', () => {
  it('equals the JavaScript fast path and the BigInt reference for every length from 0 to 2100', () => {
    const codec = nativeBlockCodec!;
    const r = mulberry32(77);
    const data = Buffer.alloc(2100 + 3);
    for (let i = 0; i < data.length; i++) data[i] = Math.floor(r() * 256);
    for (let n = 0; n <= 2100; n++) {
      const start = n % 3;
      const [lo, hi] = codec.xxph3(data, start, start + n);
      xxph3(data, start, start + n);
      expect([lo, hi]).toEqual([xxph3Result.lo, xxph3Result.hi]);
      if (n <= 300 || n % 97 === 0) {
        const ref = xxph3Reference(data.subarray(start, start + n));
        expect(BigInt(hi) * 2n ** 32n + BigInt(lo)).toBe(ref);
      }
    }
  });
});
