/**
 * Compaction: the drop rules (checked against a brute-force reader at every snapshot), output
 * files cut at the target size with tombstone-aware boundaries, and the engine's background and
 * manual compactions: triggers, level targets, write stalls, snapshots, and pinning (a file that
 * compaction replaces stays readable by an open iterator and is deleted when it closes; blocks in
 * use stay pinned in the block cache).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Memtable } from '../../../src/engine/memtable/memtable';
import { CompactionIterator, stripeOf } from '../../../src/engine/compaction/compactionIterator';
import { CompactionOutputs } from '../../../src/engine/compaction/compactionOutputs';
import { CompactionPicker, minOverlappingRatioFile } from '../../../src/engine/compaction/compactionPicker';
import { resolveCompactionOptions } from '../../../src/engine/compaction/compactionOptions';
import { Version } from '../../../src/engine/version';
import { fragmentTombstones, RangeTombstone } from '../../../src/base/fragmenter';
import { isExclusiveSentinel, filesClaimSameKey } from '../../../src/engine/rangedel/tombstoneBoundaries';
import { Engine, EngineOptions } from '../../../src/engine/engine';
import { BlockCache } from '../../../src/sstable/reader/blockCache';
import { TableReader } from '../../../src/sstable/reader/tableReader';
import { tableFileName } from '../../../src/engine/fileNames';
import { FileMetaData } from '../../../src/engine/versionEdit';
import { compareInternalKeys, makeInternalKey, sequenceOf, typeOf, userKeyOf, ValueType } from '../../../src/base/internalKey';
import { mulberry32 } from '../../../src/util/random';

const rng = mulberry32;

const b = (s: string): Buffer => Buffer.from(s);
const key = (i: number): Buffer => b(`key${String(i).padStart(6, '0')}`);

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-compaction-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

// --- the compaction iterator ---------------------------------------------------------------------

interface PointEntry {
  key: string;
  seq: number;
  type: ValueType;
  value: string;
}

/** What a read at readSeq returns for `k` over point entries and tombstones (brute force). */
function read(entries: readonly PointEntry[], tombstones: readonly RangeTombstone[], k: string, readSeq: number): string | null {
  let newest: PointEntry | null = null;
  for (const e of entries) if (e.key === k && e.seq <= readSeq && (newest === null || e.seq > newest.seq)) newest = e;
  if (newest === null || newest.type !== ValueType.Value) return null;
  const found = newest;
  const covered = tombstones.some((t) => t.seq <= readSeq && t.seq > found.seq && t.start.toString() <= k && k < t.end.toString());
  return covered ? null : found.value;
}

describe('compaction iterator', () => {
  test('stripes: the index of the first snapshot at or above a sequence', () => {
    expect(stripeOf([], 7)).toBe(0);
    expect(stripeOf([10, 20], 5)).toBe(0);
    expect(stripeOf([10, 20], 10)).toBe(0);
    expect(stripeOf([10, 20], 11)).toBe(1);
    expect(stripeOf([10, 20], 21)).toBe(2);
  });

  test('randomized: every snapshot reads the same before and after, with or without older data below', () => {
    const r = rng(0xc0ffee);
    const totals = { shadowed: 0, covered: 0, deletions: 0, tombstonesDropped: 0 };
    for (let round = 0; round < 300; round++) {
      const universe = 4 + Math.floor(r() * 20);
      const name = (i: number): string => `k${String(i).padStart(3, '0')}`;
      const entries: PointEntry[] = [];
      const tombstones: RangeTombstone[] = [];
      // Sequences from 10 up; 1..9 are left for "older data below".
      let seq = 10;
      const n = 5 + Math.floor(r() * 60);
      for (let i = 0; i < n; i++) {
        const s = seq++;
        const y = r();
        if (y < 0.15) {
          const a = Math.floor(r() * universe);
          const e = a + 1 + Math.floor(r() * r() * universe);
          tombstones.push({ start: b(name(a)), end: b(name(e)), seq: s });
        } else {
          entries.push({
            key: name(Math.floor(r() * universe)),
            seq: s,
            type: y < 0.3 ? ValueType.Deletion : ValueType.Value,
            value: `v${s}`,
          });
        }
      }
      const snapshots = [...new Set(Array.from({ length: Math.floor(r() * 4) }, () => 10 + Math.floor(r() * (seq - 10))))].sort(
        (x, y) => x - y,
      );
      const bottommost = r() < 0.5;
      const mem = new Memtable();
      for (const e of entries) mem.add(e.seq, e.type, b(e.key), b(e.value));
      const it = new CompactionIterator(mem.newIterator(), { snapshots, tombstones: fragmentTombstones(tombstones), bottommost });
      const kept: PointEntry[] = [];
      for (it.first(); it.valid(); it.next()) {
        const k = it.key();
        kept.push({ key: userKeyOf(k).toString(), seq: sequenceOf(k), type: typeOf(k), value: it.value().toString() });
      }
      const keptTombstones = it.outputTombstones().toTombstones();
      totals.shadowed += it.stats.droppedShadowed;
      totals.covered += it.stats.droppedCovered;
      totals.deletions += it.stats.droppedDeletions;
      totals.tombstonesDropped += fragmentTombstones(tombstones).toTombstones().length - keptTombstones.length;
      expect(it.stats.entriesIn).toBe(entries.length);
      expect(it.stats.entriesOut).toBe(kept.length);
      for (let i = 1; i < kept.length; i++) {
        expect(
          compareInternalKeys(
            makeInternalKey(b(kept[i - 1].key), kept[i - 1].seq, kept[i - 1].type),
            makeInternalKey(b(kept[i].key), kept[i].seq, kept[i].type),
          ),
        ).toBeLessThan(0);
      }

      // Older data below the compaction (one version per key) unless the output is bottommost.
      const below: PointEntry[] = bottommost
        ? []
        : Array.from({ length: universe }, (_, i) => ({ key: name(i), seq: 1 + (i % 9), type: ValueType.Value, value: `below${i}` }));
      for (const readSeq of [...snapshots, Number.MAX_SAFE_INTEGER]) {
        for (let i = 0; i < universe; i++) {
          const k = name(i);
          const before = read([...below, ...entries], tombstones, k, readSeq);
          const after = read([...below, ...kept], keptTombstones, k, readSeq);
          if (before !== after) {
            throw new Error(
              `round ${round}: ${k} at ${readSeq} (snapshots ${snapshots}, bottommost ${bottommost}): ${before} became ${after}`,
            );
          }
        }
      }
    }
    // The rules did fire, all of them.
    expect(totals.shadowed).toBeGreaterThan(100);
    expect(totals.covered).toBeGreaterThan(100);
    expect(totals.deletions).toBeGreaterThan(50);
    expect(totals.tombstonesDropped).toBeGreaterThan(50);
  });
});

// --- output files ------------------------------------------------------------------------------

describe('compaction outputs', () => {
  function writeOutputs(points: Array<[string, number]>, tombstones: RangeTombstone[], targetFileSizeBytes: number): FileMetaData[] {
    let next = 100;
    const out = new CompactionOutputs({
      dir,
      table: { blockSizeBytes: 256, compression: 0 },
      targetFileSizeBytes,
      newFileNumber: () => next++,
      tombstones: fragmentTombstones(tombstones),
    });
    for (const [k, seq] of points) out.add(makeInternalKey(b(k), seq, ValueType.Value), b(`value-of-${k}-${seq}-${'p'.repeat(40)}`));
    return out.finish();
  }

  const pieces = (f: FileMetaData): string[] => {
    const reader = TableReader.open(tableFileName(dir, f.fileNumber));
    try {
      return reader.rangeTombstones().map((t) => `[${t.start}, ${t.end})@${t.seq}`);
    } finally {
      reader.close();
    }
  };

  test('files are cut at the target size, never inside a user key', () => {
    const points: Array<[string, number]> = [];
    for (let i = 0; i < 400; i++) for (let v = 3; v >= 1; v--) points.push([`k${String(i).padStart(4, '0')}`, i * 10 + v]);
    const files = writeOutputs(points, [], 4096);
    expect(files.length).toBeGreaterThan(5);
    for (let i = 0; i < files.length; i++) {
      const f = files[i];
      // A file is cut once its estimate reaches the target: it ends at most one user key later.
      if (i < files.length - 1) expect(f.fileSizeBytes).toBeGreaterThanOrEqual(4096);
      // Meta blocks (index, filter, properties) come on top of the estimate.
      expect(f.fileSizeBytes).toBeLessThan(4096 + 2048);
      if (i > 0) {
        expect(Buffer.compare(userKeyOf(files[i - 1].largest), userKeyOf(f.smallest))).toBeLessThan(0);
        expect(filesClaimSameKey(files[i - 1].largest, f.smallest)).toBe(false);
      }
    }
  });

  test("a tombstone spanning the gap between files extends both; sentinel ends never claim the next file's key", () => {
    // Points a000..a199 and c000..c199; a tombstone from before the first point to the middle of
    // the c's, another over the gap b.., one past the end.
    const points: Array<[string, number]> = [];
    for (let i = 0; i < 200; i++) points.push([`a${String(i).padStart(3, '0')}`, 10]);
    for (let i = 0; i < 200; i++) points.push([`c${String(i).padStart(3, '0')}`, 10]);
    const tombstones: RangeTombstone[] = [
      { start: b('0'), end: b('a050'), seq: 20 },
      { start: b('a150'), end: b('c100'), seq: 30 },
      { start: b('x'), end: b('z'), seq: 40 },
    ];
    const files = writeOutputs(points, tombstones, 3000);
    expect(files.length).toBeGreaterThan(3);
    // The first file extends left to the first tombstone's start; the last ends at the last
    // tombstone's sentinel.
    expect(userKeyOf(files[0].smallest).toString()).toBe('0');
    expect(typeOf(files[0].smallest)).toBe(ValueType.RangeDeletion);
    const last = files[files.length - 1];
    expect(isExclusiveSentinel(last.largest)).toBe(true);
    expect(userKeyOf(last.largest).toString()).toBe('z');
    // Some file in the middle ends at a sentinel equal to the next file's first user key.
    let sentinelBeforeNext = 0;
    const all: string[] = [];
    for (let i = 0; i < files.length; i++) {
      const f = files[i];
      all.push(...pieces(f));
      if (i > 0) expect(filesClaimSameKey(files[i - 1].largest, f.smallest)).toBe(false);
      if (i < files.length - 1 && isExclusiveSentinel(f.largest)) {
        expect(userKeyOf(f.largest).equals(userKeyOf(files[i + 1].smallest))).toBe(true);
        sentinelBeforeNext++;
      }
      // Every piece lies within the file's bounds.
      for (const p of pieces(f)) {
        const [start, end] = p.slice(1, p.indexOf(')')).split(', ');
        expect(start >= userKeyOf(f.smallest).toString()).toBe(true);
        expect(end <= userKeyOf(f.largest).toString() || !isExclusiveSentinel(f.largest)).toBe(true);
      }
    }
    expect(sentinelBeforeNext).toBeGreaterThan(0);
    // The pieces put together cover exactly what the tombstones cover.
    const joined = all.map((p) => {
      const [range, seq] = p.split('@');
      const [start, end] = range.slice(1, -1).split(', ');
      return { start, end, seq: Number(seq) };
    });
    const coverage = (ts: Array<{ start: string; end: string; seq: number }>, k: string): number =>
      Math.max(0, ...ts.filter((t) => t.start <= k && k < t.end).map((t) => t.seq));
    const original = tombstones.map((t) => ({ start: t.start.toString(), end: t.end.toString(), seq: t.seq }));
    for (const k of [
      '',
      '0',
      '00',
      'a',
      'a049',
      'a050',
      'a149',
      'a150',
      'b',
      'c000',
      'c099',
      'c100',
      'w',
      'x',
      'y',
      'z',
      'zz',
      ...points.map((p) => p[0]),
    ]) {
      expect(coverage(joined, k)).toBe(coverage(original, k));
    }
    // Pieces are cut only where files start.
    const cuts = new Set(files.slice(1).map((f) => userKeyOf(f.smallest).toString()));
    for (const t of joined) if (!original.some((o) => o.start === t.start)) expect(cuts.has(t.start)).toBe(true);
  });

  test('tombstones alone make one file; abort deletes everything written', () => {
    const files = writeOutputs([], [{ start: b('m'), end: b('p'), seq: 5 }], 4096);
    expect(files.length).toBe(1);
    expect(userKeyOf(files[0].smallest).toString()).toBe('m');
    expect(isExclusiveSentinel(files[0].largest)).toBe(true);
    let next = 200;
    const out = new CompactionOutputs({
      dir,
      table: { blockSizeBytes: 256 },
      targetFileSizeBytes: 1024,
      newFileNumber: () => next++,
      tombstones: fragmentTombstones([]),
    });
    for (let i = 0; i < 300; i++) out.add(makeInternalKey(key(i), 1, ValueType.Value), b('x'.repeat(50)));
    expect(next).toBeGreaterThan(202);
    out.abort();
    for (let n = 200; n < next; n++) expect(fs.existsSync(tableFileName(dir, n))).toBe(false);
  });
});

// --- the engine ----------------------------------------------------------------------------------

const SMALL: EngineOptions = {
  writeBufferSizeBytes: 32 * 1024,
  table: { blockSizeBytes: 1024 },
  maxBytesForLevelBase: 128 * 1024,
  maxBytesForLevelMultiplier: 4,
  targetFileSizeBytes: 32 * 1024,
  compactionSliceEntries: 256,
};

/** 64 hex digits that differ per (i, round): values that do not compress away. */
function noise(i: number, round: number): string {
  let x = (i * 2654435761 + round * 40503 + 12345) >>> 0;
  let out = '';
  for (let j = 0; j < 8; j++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out += x.toString(16).padStart(8, '0');
  }
  return out;
}

const val = (i: number, round: number): string => `r${round}-${i}-${noise(i, round)}`;

async function fill(e: Engine, from: number, to: number, round: number, stride = 1): Promise<void> {
  for (let i = from; i < to; i += stride) await e.put(key(i), b(val(i, round)));
}

function scanAll(e: Engine): string[] {
  const it = e.newIterator();
  const out: string[] = [];
  for (it.first(); it.valid(); it.next()) out.push(`${it.key()}=${it.value()}`);
  it.close();
  return out;
}

describe('compaction picker', () => {
  /** A table file of `sizeBytes` holding user keys [from, to]. */
  let nextFileNumber = 1;
  function file(from: string, to: string, sizeBytes: number): FileMetaData {
    return {
      fileNumber: nextFileNumber++,
      fileSizeBytes: sizeBytes,
      smallest: makeInternalKey(Buffer.from(from), 10, ValueType.Value),
      largest: makeInternalKey(Buffer.from(to), 10, ValueType.Value),
      smallestSeq: 10,
      largestSeq: 10,
    };
  }
  const OPTIONS = { numLevels: 7, level0FileNumCompactionTrigger: 4, maxBytesForLevelBase: 1000, maxBytesForLevelMultiplier: 10 };

  test('min-overlapping-ratio: the least rewriting below per byte moved down; ties to the smaller keys', () => {
    // L1: a [a-c] 100 B, b [d-f] 100 B, c [g-i] 50 B, d [j-l] 100 B, e [x-z] 10 B.
    const l1 = [file('a', 'c', 100), file('d', 'f', 100), file('g', 'i', 50), file('j', 'l', 100), file('x', 'z', 10)];
    // L2: [b-b] 300 B under a; [e-h] 120 B crosses from b into c; [k-k] 100 B under d; [y-y] 5 B under e.
    const l2 = [file('b', 'b', 300), file('e', 'h', 120), file('k', 'k', 100), file('y', 'y', 5)];
    // Ratios: a 3.0, b 1.2, c 2.4 (the crossing file counts for both), d 1.0, e 0.5.
    expect(minOverlappingRatioFile(l1, l2)).toBe(l1[4]);
    expect(minOverlappingRatioFile(l1.slice(0, 4), l2)).toBe(l1[3]);
    expect(minOverlappingRatioFile(l1.slice(0, 3), l2)).toBe(l1[1]);
    // Nothing below: every ratio is 0, and the smallest keys win.
    expect(minOverlappingRatioFile(l1, [])).toBe(l1[0]);
    // Bounds are inclusive: a next-level file starting at a file's largest key overlaps it.
    const touching = [file('c', 'c', 1000)];
    expect(minOverlappingRatioFile([file('a', 'c', 10), file('d', 'e', 10)], touching).smallest.toString('latin1', 0, 1)).toBe('d');
  });

  test('min-overlapping-ratio moves the file overlapping nothing; round-robin walks the level by key whatever lies below', () => {
    const l1 = [file('a', 'b', 600), file('c', 'd', 600), file('e', 'f', 600)];
    const l2 = [file('a', 'a', 6000), file('c', 'c', 6000)]; // under the first two only
    const version = new Version([[], l1, l2, [], [], [], []], () => undefined);
    // L1 holds 1800 B against a 1000 B target: a size-triggered L1 -> L2 compaction.
    const byOverlap = new CompactionPicker({ ...OPTIONS, compactionPri: 'min-overlapping-ratio' });
    for (let i = 0; i < 3; i++) {
      const c = byOverlap.pickAuto(version);
      expect(c?.level).toBe(1);
      expect(c?.inputs[0]).toEqual([l1[2]]); // overlaps nothing: a trivial move, every time
      expect(c?.trivialMove).toBe(true);
    }
    const roundRobin = new CompactionPicker({ ...OPTIONS, compactionPri: 'round-robin' });
    const picked = [0, 1, 2, 3].map(() => roundRobin.pickAuto(version)?.inputs[0][0]);
    expect(picked).toEqual([l1[0], l1[1], l1[2], l1[0]]);
  });

  test("compactionPri defaults to RocksDB's min-overlapping-ratio; an unknown one is rejected when the engine opens", async () => {
    expect(resolveCompactionOptions({}).compactionPri).toBe('min-overlapping-ratio');
    await expect(
      Engine.open(path.join(dir, 'bad-pri'), { compactionPri: 'oldest-first' as unknown as 'round-robin' }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('engine compactions', () => {
  test('L0 compacts into L1 on the file-count trigger; deeper levels stay within their targets', async () => {
    const e = await Engine.open(dir, SMALL);
    // Random order: flushed files overlap, so nothing can be moved trivially.
    const order = Array.from({ length: 6000 }, (_, i) => (i * 4007) % 6000);
    for (let round = 0; round < 3; round++) for (const i of order) await e.put(key(i), b(val(i, round)));
    await e.flush();
    await e.waitForCompactions();
    const s = e.stats();
    expect(s.filesPerLevel[0]).toBeLessThan(4);
    expect(s.compaction.count).toBeGreaterThanOrEqual(1);
    expect(s.compaction.bytesWrittenPerLevel[1]).toBeGreaterThan(0);
    expect(s.bytesPerLevel[2]).toBeGreaterThan(0);
    // Every level below L0 is back under its target (score < 1), the last level used excepted.
    for (let level = 1; level < s.levelScores.length - 1; level++) expect(s.levelScores[level]).toBeLessThan(1);
    expect(s.bytesPerLevel[1]).toBeLessThanOrEqual(128 * 1024);
    // Shadowed versions were dropped on the way: two thirds of what was written.
    expect(s.compaction.entriesDropped).toBeGreaterThan(6000);
    // Output files are cut at the target size.
    for (const files of e.levelFiles().slice(1)) for (const f of files.slice(0, -1)) expect(f.fileSizeBytes).toBeLessThan(32 * 1024 + 4096);
    expect(scanAll(e).length).toBe(6000);
    expect(e.get(key(1234))?.toString()).toBe(val(1234, 2));
    await e.close();
  });

  test('writes stall, and never fail, while L0 is at level0StopWritesTrigger', async () => {
    const e = await Engine.open(dir, {
      ...SMALL,
      writeBufferSizeBytes: 16 * 1024,
      level0FileNumCompactionTrigger: 2,
      level0StopWritesTrigger: 3,
      // Slow compactions: a few entries per slice.
      compactionSliceEntries: 8,
    });
    let maxL0 = 0;
    const writers: Array<Promise<void>> = [];
    for (let w = 0; w < 4; w++) {
      writers.push(
        (async () => {
          for (let i = 0; i < 3000; i++) {
            await e.put(key((i * 7 + w * 13) % 5000), b(`w${w}-${i}-${'v'.repeat(40)}`));
            maxL0 = Math.max(maxL0, e.stats().filesPerLevel[0]);
          }
        })(),
      );
    }
    await Promise.all(writers);
    await e.flush();
    await e.waitForCompactions();
    const s = e.stats();
    expect(s.level0WriteStalls).toBeGreaterThan(0);
    // The stop trigger plus the immutable memtables already queued behind it.
    expect(maxL0).toBeLessThanOrEqual(3 + 2);
    expect(s.lastSequence).toBe(12000);
    await e.close();
  });

  test('compaction keeps what snapshots need and drops covered keys and tombstones at the bottom', async () => {
    const e = await Engine.open(dir, { ...SMALL, disableAutoCompactions: true });
    await fill(e, 0, 1000, 0);
    await e.flush();
    const snap = e.getSnapshot();
    await fill(e, 0, 1000, 1, 2); // new versions of the even keys
    await e.deleteRange(key(100), key(300));
    await e.delete(key(501));
    await e.compactRange();
    const levels = e.levelFiles();
    expect(levels[0].length).toBe(0);
    // The snapshot still reads the old versions, the range, and the deleted key.
    expect(e.get(key(200), { snapshot: snap })?.toString()).toBe(val(200, 0));
    expect(e.get(key(501), { snapshot: snap })?.toString()).toBe(val(501, 0));
    expect(e.get(key(200))).toBeNull();
    expect(e.get(key(501))).toBeNull();
    expect(e.get(key(600))?.toString()).toBe(val(600, 1));
    expect(e.rangeTombstones().length).toBeGreaterThan(0); // needed by the snapshot
    const beforeRelease = e.stats().compaction;
    snap.release();
    await e.compactRange();
    const after = e.stats();
    // Bottommost, no snapshot: the tombstone, the point deletion and everything under them go.
    expect(e.rangeTombstones()).toEqual([]);
    expect(after.compaction.tombstonesDropped).toBeGreaterThan(beforeRelease.tombstonesDropped);
    // Now dropped: the old versions of [100, 300) (200; the newer even ones went in the first
    // compaction, covered in their stripe), the old versions of the other 400 even keys
    // (shadowed), and key 501's value and deletion.
    expect(after.compaction.entriesDropped - beforeRelease.entriesDropped).toBe(200 + 400 + 2);
    const all = scanAll(e);
    expect(all.length).toBe(1000 - 200 - 1);
    expect(all[0]).toBe(`${key(0)}=${val(0, 1)}`);
    // compactRange over a sub-range only touches files overlapping it.
    const filesBefore = e
      .levelFiles()
      .flat()
      .map((f) => f.fileNumber);
    await e.deleteRange(key(990), key(995));
    await e.compactRange(key(990), key(994));
    const filesAfter = e
      .levelFiles()
      .flat()
      .map((f) => f.fileNumber);
    expect(filesAfter.filter((n) => filesBefore.includes(n)).length).toBeGreaterThan(0);
    expect(scanAll(e).length).toBe(1000 - 200 - 1 - 5);
    expect(e.rangeTombstones()).toEqual([]);
    await e.close();
  });

  test('a range tombstone spanning output files extends their bounds; reads clip it to each file', async () => {
    const e = await Engine.open(dir, { ...SMALL, targetFileSizeBytes: 8 * 1024, disableAutoCompactions: true });
    await fill(e, 0, 4000, 0, 2);
    await e.flush();
    const snap = e.getSnapshot(); // keeps the covered keys, so the tombstone stays between them
    await e.deleteRange(b('key000999x'), b('key003001x'));
    await e.compactRange();
    const l = e.levelFiles();
    const files = l.find((fs) => fs.length > 1) ?? [];
    expect(files.length).toBeGreaterThan(5);
    const withSentinel = files.filter((f) => isExclusiveSentinel(f.largest));
    expect(withSentinel.length).toBeGreaterThan(2);
    for (let i = 1; i < files.length; i++) expect(filesClaimSameKey(files[i - 1].largest, files[i].smallest)).toBe(false);
    expect(e.get(key(1000))).toBeNull();
    expect(e.get(key(3002))).not.toBeNull();
    expect(e.get(key(998))).not.toBeNull();
    expect(e.get(key(2000), { snapshot: snap })).not.toBeNull();
    expect(scanAll(e).length).toBe(2000 - 1001);
    snap.release();
    await e.close();
  });

  test('a file compaction replaces stays readable by an open iterator and is deleted when it closes', async () => {
    const cache = new BlockCache(0); // nothing stays cached unless pinned
    const e = await Engine.open(dir, {
      ...SMALL,
      writeBufferSizeBytes: 4 << 20,
      disableAutoCompactions: true,
      maxOpenFiles: 1,
      blockCache: cache,
    });
    await fill(e, 0, 3000, 0);
    await e.flush();
    await fill(e, 0, 3000, 1, 3);
    await e.flush();
    const oldFiles = e
      .levelFiles()
      .flat()
      .map((f) => f.fileNumber);
    expect(oldFiles.length).toBe(2);
    const it = e.newIterator();
    it.first();
    expect(it.key().equals(key(0))).toBe(true);
    // The iterator stands on a block: pinned, though the cache holds nothing else.
    expect(cache.pinnedCount).toBeGreaterThan(0);
    const pinnedValue = it.value();
    const pinnedCopy = Buffer.from(pinnedValue);
    await e.compactRange();
    // Replaced in the current version, still on disk for the iterator.
    const newFiles = e
      .levelFiles()
      .flat()
      .map((f) => f.fileNumber);
    expect(newFiles.some((n) => oldFiles.includes(n))).toBe(false);
    for (const n of oldFiles) expect(fs.existsSync(tableFileName(dir, n))).toBe(true);
    // Reads through the new version churn the cache and the single-entry table cache meanwhile.
    for (let i = 0; i < 3000; i += 7) e.get(key(i));
    expect(pinnedValue.equals(pinnedCopy)).toBe(true);
    let n = 1;
    for (it.next(); it.valid(); it.next()) n++;
    expect(n).toBe(3000);
    it.close();
    expect(cache.pinnedCount).toBe(0);
    for (const f of oldFiles) expect(fs.existsSync(tableFileName(dir, f))).toBe(false);
    expect(scanAll(e).length).toBe(3000);
    await e.close();
  });

  test('a compaction runs in slices: reads are served while it is under way', async () => {
    const e = await Engine.open(dir, {
      ...SMALL,
      writeBufferSizeBytes: 4 << 20,
      disableAutoCompactions: true,
      compactionSliceEntries: 512,
    });
    const order = Array.from({ length: 8000 }, (_, i) => (i * 4007) % 8000);
    for (const i of order) await e.put(key(i), b(val(i, 0)));
    await e.flush();
    for (const i of order) if (i % 2 === 0) await e.put(key(i), b(val(i, 1)));
    await e.flush();
    let done = false;
    const compaction = e.compactRange().then(() => {
      done = true;
    });
    let reads = 0;
    while (!done) {
      const i = (reads * 31) % 8000;
      expect(e.get(key(i))?.toString()).toBe(val(i, i % 2 === 0 ? 1 : 0));
      const it = e.newIterator({ lowerBound: key(i) });
      it.first();
      expect(it.key().equals(key(i))).toBe(true);
      it.close();
      reads++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await compaction;
    // 12000 input entries in slices of 512: the event loop came back between slices.
    expect(reads).toBeGreaterThan(12000 / 512 / 2);
    expect(e.stats().compaction.count).toBe(1);
    await e.close();
  });

  test('close stops a running compaction and leaves no partial output', async () => {
    const e = await Engine.open(dir, { ...SMALL, compactionSliceEntries: 16, level0FileNumCompactionTrigger: 2 });
    const order = Array.from({ length: 4000 }, (_, i) => (i * 4007) % 4000);
    for (const i of order) await e.put(key(i), b(val(i, 0)));
    await e.flush();
    for (const i of order) await e.put(key(i), b(val(i, 1)));
    await e.flush();
    expect(e.stats().compaction.running).toBe(true);
    await e.close();
    const r = await Engine.open(dir, { ...SMALL, disableAutoCompactions: true });
    const live = new Set(
      r
        .levelFiles()
        .flat()
        .map((f) => `${String(f.fileNumber).padStart(6, '0')}.sst`),
    );
    const onDisk = fs.readdirSync(dir).filter((f) => f.endsWith('.sst'));
    expect(onDisk.sort()).toEqual([...live].sort());
    expect(r.get(key(17))?.toString()).toBe(val(17, 1));
    await r.close();
  });
});
