/**
 * Work counts (not timings) of the engine's read paths, from the perf context, on 100k keys in
 * one sorted run of several files spread over many 4 KiB blocks:
 * - a bounded forward scan pays for bound checks once per file and data block, not per key;
 * - seekGE with trySeekUsingNext costs fewer comparisons than full seeks;
 * - a get of an absent key is answered by Bloom filters (10 bits per key) nearly always
 *   without touching a data block.
 * The figures are printed for the record, with the per-key-check and full-seek baselines.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { WriteBatch } from '../../src/engine/writeBatch';
import { VersionEdit } from '../../src/engine/versionEdit';
import { TableCache } from '../../src/engine/tableCache';
import { BlockCache } from '../../src/sstable/reader/blockCache';
import { LevelIterator } from '../../src/engine/levelIterator';
import { PerKeyBoundsIterator } from '../../src/engine/boundedIterator';
import { MergingIterator } from '../../src/engine/mergingIterator';
import { DbIterator } from '../../src/engine/dbIterator';
import { perf, resetPerfContext, snapshotPerfContext } from '../../src/base/perfContext';

/** 102,000 keys, so that the bounded scan below (1,000 cut at each end) covers 100,000. */
const KEYS = 102_000;
const key = (i: number): Buffer => Buffer.from(`user${String(i).padStart(8, '0')}`);

let dir: string;
let engine: Engine;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-perf-'));
  engine = await Engine.open(dir, { writeBufferSizeBytes: 1 << 20, table: { blockSizeBytes: 4096, bloomBitsPerKey: 10 } });
  for (let i = 0; i < KEYS; i += 1000) {
    const b = new WriteBatch();
    for (let j = i; j < i + 1000; j++) b.put(key(j), Buffer.from(`value-${j}-${'p'.repeat(20)}`));
    await engine.write(b);
  }
  await engine.flush();
  // Sequential keys flush into disjoint files: move them, oldest first, into L1 as one sorted run.
  const l0 = [...engine.levelFiles()[0]].reverse();
  for (const f of l0) engine.applyVersionEdit(new VersionEdit().deleteFile(0, f.fileNumber).addFile(1, f));
});

afterAll(async () => {
  await engine.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('setup: one sorted run of several files', () => {
  expect(engine.stats().filesPerLevel[0]).toBe(0);
  expect(engine.stats().filesPerLevel[1]).toBeGreaterThan(2);
});

test('a bounded forward scan checks bounds per file and block, not per key', () => {
  const lower = key(1000);
  const upper = key(KEYS - 1000);
  const scan = (it: DbIterator): number => {
    let n = 0;
    for (it.first(); it.valid(); it.next()) n++;
    it.close();
    return n;
  };
  engine.newIterator({ lowerBound: lower, upperBound: upper }).close(); // warm the table cache
  resetPerfContext();
  const n = scan(engine.newIterator({ lowerBound: lower, upperBound: upper }));
  const withBlocks = snapshotPerfContext();
  expect(n).toBe(KEYS - 2000);
  expect(n).toBeGreaterThanOrEqual(100_000);

  // The same stack with the bounds checked on every key, for comparison.
  const cache = new TableCache(dir, { maxOpenFiles: 100, blockCache: new BlockCache(64 << 20) });
  const level = new PerKeyBoundsIterator(new LevelIterator(engine.levelFiles()[1], cache), lower, upper);
  resetPerfContext();
  const m = scan(new DbIterator(new MergingIterator([level]), [level], engine.lastSequence, () => undefined));
  const perKey = snapshotPerfContext();
  cache.close();
  expect(m).toBe(n);

  const fmt = (p: typeof perf): string =>
    `${(p.keyComparisons / n).toFixed(4)} key comparisons/key (${(p.boundComparisons / n).toFixed(4)} on bounds), ${p.dataBlocksRead + p.blockCacheHits} data blocks`;
  console.log(`bounded scan of ${n} keys: per-block bound checks: ${fmt(withBlocks)}; per-key bound checks: ${fmt(perKey)}`);
  expect(withBlocks.keyComparisons / n).toBeLessThanOrEqual(1.1);
  expect(withBlocks.boundComparisons / n).toBeLessThan(0.05);
  expect(perKey.boundComparisons / n).toBeGreaterThanOrEqual(1);
});

test('seekGE with trySeekUsingNext steps instead of searching when targets are close', () => {
  const it = engine.newIterator();
  const run = (stride: number, flag: boolean): number => {
    resetPerfContext();
    let first = true;
    let seeks = 0;
    for (let i = 0; i < KEYS; i += stride) {
      it.seekGE(key(i), { trySeekUsingNext: flag && !first });
      first = false;
      seeks++;
      if (!it.valid() || !it.key().equals(key(i))) throw new Error(`seekGE ${key(i)} landed on ${it.valid() ? it.key() : 'nothing'}`);
    }
    return perf.keyComparisons / seeks;
  };
  const figures: string[] = [];
  for (const stride of [1, 3, 7]) {
    const full = run(stride, false);
    const stepping = run(stride, true);
    figures.push(`stride ${stride}: ${full.toFixed(2)} -> ${stepping.toFixed(2)}`);
    // Within TRY_SEEK_USING_NEXT_STEPS of the current key, stepping beats searching by far;
    // beyond it, it must not cost much more than the search it falls back to.
    if (stride <= 3) expect(stepping).toBeLessThan(full / 2);
    else expect(stepping).toBeLessThan(full + 8);
  }
  it.close();
  console.log(`seekGE key comparisons/seek, full seek -> trySeekUsingNext: ${figures.join('; ')}`);
});

test('a get of an absent key reads at most 0.02 data blocks on average (10 bits/key Bloom filter)', () => {
  const gets = 20_000;
  resetPerfContext();
  for (let i = 0; i < gets; i++) {
    // Between two stored keys, so the key-range check cannot rule the file out.
    const absent = Buffer.concat([key((i * 5) % KEYS), Buffer.from('x')]);
    if (engine.get(absent) !== null) throw new Error(`found absent key ${absent}`);
  }
  const blocks = (perf.dataBlocksRead + perf.blockCacheHits) / gets;
  console.log(
    `absent gets: ${blocks.toFixed(4)} data blocks/get, ${(perf.bloomChecks / gets).toFixed(2)} filter probes/get, ${(perf.bloomNegatives / perf.bloomChecks).toFixed(4)} of probes negative`,
  );
  expect(perf.bloomChecks).toBe(gets);
  expect(blocks).toBeLessThanOrEqual(0.02);

  resetPerfContext();
  for (let i = 0; i < 1000; i++)
    expect(
      engine
        .get(key(i * 97))
        ?.toString()
        .startsWith(`value-${i * 97}-`),
    ).toBe(true);
  expect((perf.dataBlocksRead + perf.blockCacheHits) / 1000).toBeCloseTo(1, 1);
});
