/**
 * Punching consumed run bytes (RunReadRegion in src/ingest/sort/runFile.ts), on both merge paths:
 * a merge that is its runs' only reader frees what it has read; the partitions of a parallel
 * merge free only what no other partition reads, so running them one after another, in either
 * order, still writes what one unpunched merge writes; and under resume hooks nothing is freed
 * until a file is recorded, then only below where a resume would start reading. Punching is
 * the native addon's: without it these skip, or fail under SST_INGEST_REQUIRE_NATIVE=1.
 */
import * as fs from 'fs';
import * as path from 'path';
import { RunInfo, RunWriter, WHOLE_RUN, startOffsetBelow } from '../../../src/ingest/sort/runFile';
import { MergeCheckpoint, MergeRange, MergeResumeHooks, mergeRunsIntoSsts } from '../../../src/ingest/sort/mergeToSsts';
import { planKeyRanges, readRegionsOf } from '../../../src/ingest/sort/parallelMerge';
import { SstSetWriter, WrittenFile } from '../../../src/ingest/sort/sstSetWriter';
import { CompressionType } from '../../../src/sstable/compression';
import { mulberry32 } from '../../../src/util/random';
import { tempDir } from '../support';
import { describeIfNative } from '../../support/native';
import { TableReader } from '../../../src/sstable/reader/tableReader';
import { userKeyOf } from '../../../src/base/internalKey';

const OPTIONS = {
  backgroundCompression: false,
  dbSessionId: 'RUNPUNCHTEST00000000',
  compression: CompressionType.None,
  blockSizeBytes: 512,
};
const ROWS = 40000;

/** Three runs of distinct 12-byte keys with 100-byte values: about 4.6 MB each, many punch steps. */
function writeRuns(dir: string): RunInfo[] {
  const r = mulberry32(11);
  const groups: Buffer[][] = [[], [], []];
  for (let i = 0; i < ROWS; i++) groups[Math.floor(r() * 3)].push(Buffer.from(`k${String((i * 7919) % 1000003).padStart(11, '0')}`));
  return groups.map((keys, g) => {
    keys.sort(Buffer.compare);
    const w = new RunWriter(path.join(dir, `r${g}.run`));
    keys.forEach((k, i) => w.add(Buffer.concat([k, Buffer.alloc(100, 97 + (i % 26))]), 0, k.length, 100, g, i + 1));
    return w.finish();
  });
}

/** Bytes the file system holds for `file`: less than its size once holes are punched. */
function allocatedBytes(file: string): number {
  return fs.statSync(file).blocks * 512;
}

/** One merge; returns its files' bytes (the files removed), in order. */
function merge(dir: string, runs: RunInfo[], range: MergeRange, native: boolean, tag: string, resume?: MergeResumeHooks): Buffer[] {
  process.env.SST_INGEST_NATIVE_MERGE = native ? '1' : '0';
  const out = new SstSetWriter(dir, tag, 0, 200000, OPTIONS);
  mergeRunsIntoSsts(runs, 'first', out, 8192, undefined, range, resume);
  return out.finish().map((f) => {
    const bytes = fs.readFileSync(f.tempPath);
    fs.rmSync(f.tempPath);
    return bytes;
  });
}

/** The entries of SST files (given as bytes), in order, as "key=value" hex lines. */
function entriesOf(dir: string, ssts: Buffer[]): string[] {
  const lines: string[] = [];
  const file = path.join(dir, 'read.sst');
  for (const bytes of ssts) {
    fs.writeFileSync(file, bytes);
    const reader = TableReader.open(file);
    const it = reader.newIterator();
    for (it.first(); it.valid(); it.next())
      lines.push(`${Buffer.from(userKeyOf(it.key())).toString('hex')}=${Buffer.from(it.value()).toString('hex')}`);
    it.close();
    reader.close();
  }
  fs.rmSync(file);
  return lines;
}

function unbounded(runs: RunInfo[]): MergeRange {
  return { low: null, high: null, startOffsets: runs.map(() => 8) };
}

describe('readRegionsOf', () => {
  it("gives each partition bytes no other partition's reader reaches, and covers the runs between them", () => {
    const dir = tempDir('run-regions-test-');
    try {
      const runs = writeRuns(dir);
      for (const parts of [2, 3, 5]) {
        const plans = planKeyRanges(runs, parts);
        const regions = plans.map((_, p) => readRegionsOf(runs, plans, p));
        runs.forEach((run, r) => {
          let covered = 0;
          plans.forEach((_plan, p) => {
            const own = regions[p][r];
            expect(own.punchFrom).toBeLessThanOrEqual(own.punchTo);
            covered += own.punchTo - own.punchFrom;
            plans.forEach((other, q) => {
              if (q === p) return;
              // Partition q reads [its start, its end): nothing of it may lie in p's own bytes.
              const readFrom = other.startOffsets[r];
              const readTo = regions[q][r].endOffset;
              expect(readTo <= own.punchFrom || readFrom >= own.punchTo).toBe(true);
            });
          });
          // Only the overlaps at the boundaries (a sample interval each) are nobody's own.
          expect(covered).toBeGreaterThan(run.bytes - 2 * parts * (64 << 10));
        });
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Punching is the native addon's (punchHole): without it nothing is freed, so these need it.
describeIfNative.each([false, true])('punching consumed run bytes (native merge: %s)', (native) => {
  let dir: string;
  const saved = process.env.SST_INGEST_NATIVE_MERGE;
  beforeEach(() => {
    dir = tempDir('run-punch-test-');
  });
  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.SST_INGEST_NATIVE_MERGE;
    else process.env.SST_INGEST_NATIVE_MERGE = saved;
  });

  it('an only reader frees what it reads and writes what an unpunched merge writes', () => {
    const runs = writeRuns(dir);
    const before = runs.map((r) => allocatedBytes(r.path));
    const plain = merge(dir, runs, unbounded(runs), native, 'plain');
    expect(runs.map((r) => allocatedBytes(r.path))).toEqual(before);
    const punched = merge(dir, runs, { ...unbounded(runs), regions: runs.map(() => WHOLE_RUN) }, native, 'punched');
    expect(punched.length).toBe(plain.length);
    punched.forEach((b, i) => expect(b.equals(plain[i])).toBe(true));
    runs.forEach((r, i) => {
      // All but the header page and the last unpunched step (under 256 KiB) is gone.
      expect(allocatedBytes(r.path)).toBeLessThan(before[i] - r.bytes / 2);
      expect(fs.readFileSync(r.path).subarray(0, 8).toString('latin1')).toBe('INGRUN1\n');
    });
  });

  it.each([
    ['in key order', [0, 1, 2]],
    ['in reverse', [2, 1, 0]],
  ])('partitions run one after another (%s) free only their own bytes', (_name, order) => {
    const runs = writeRuns(dir);
    const plain = merge(dir, runs, unbounded(runs), native, 'plain');
    const plans = planKeyRanges(runs, 3);
    expect(plans.length).toBe(3);
    const parts: Buffer[][] = [];
    for (const p of order) {
      const plan = plans[p];
      const range: MergeRange = {
        low: plan.lowHex === null ? null : Buffer.from(plan.lowHex, 'hex'),
        high: plan.highHex === null ? null : Buffer.from(plan.highHex, 'hex'),
        startOffsets: plan.startOffsets,
        regions: readRegionsOf(runs, plans, p),
      };
      parts[p] = merge(dir, runs, range, native, `p${p}`);
    }
    const expected = entriesOf(dir, plain);
    expect(expected.length).toBe(ROWS);
    expect(entriesOf(dir, parts.flat())).toEqual(expected);
    // Each partition's own part of each run (about a third) is at least one punch step.
    runs.forEach((r) => expect(allocatedBytes(r.path)).toBeLessThan(r.bytes - 3 * (200 << 10)));
  });

  it('frees nothing before a file is recorded, then only below where a resume starts', () => {
    const runs = writeRuns(dir);
    const before = runs.map((r) => allocatedBytes(r.path));
    /** What a resume after `recorded` would read of each run is still there (its first page, at least). */
    const expectResumeRangeIntact = (recorded: WrittenFile | null): void =>
      runs.forEach((r, i) => {
        if (recorded === null) {
          expect(allocatedBytes(r.path)).toBe(before[i]);
          return;
        }
        const tail = fs.readFileSync(r.path).subarray(startOffsetBelow(r, Buffer.from(recorded.largestUserKey)));
        expect(tail.subarray(0, 4096).some((b) => b !== 0)).toBe(true);
      });
    const finished: WrittenFile[] = [];
    // A file counts as recorded once onFileFinished returns: while it runs, only the earlier files are.
    const hooks: MergeResumeHooks = {
      initial: { rowsWritten: 0, duplicateCount: 0, duplicates: [] },
      onFileFinished: (f: WrittenFile, _upTo: MergeCheckpoint) => {
        expectResumeRangeIntact(finished.length === 0 ? null : finished[finished.length - 1]);
        finished.push(f);
      },
    };
    merge(dir, runs, { ...unbounded(runs), regions: runs.map(() => WHOLE_RUN) }, native, 'recorded', hooks);
    expect(finished.length).toBeGreaterThan(3);
    expectResumeRangeIntact(finished[finished.length - 1]);
    // Something before it is gone.
    runs.forEach((r, i) => expect(allocatedBytes(r.path)).toBeLessThan(before[i]));
  });
});
