/**
 * The memtable's two read aids: the skiplist's native searches (native/skiplistSearch.c, through
 * src/engine/memtable/nativeSkiplist.ts) against the JavaScript walk they replace, loaded side by
 * side (the JavaScript one from a registry of its own with SST_INGEST_NATIVE_SKIPLIST=0): the
 * same splices, the same nodes found, the same comparisons counted; and the memtable's Bloom
 * filter (memtableFilter.ts): no key it holds is ever skipped, and a key it lacks usually is,
 * without a skiplist comparison.
 */
import { describeIfNative } from '../../support/native';
import { loadWithEnv } from '../../support/isolatedModules';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, ValueType } from '../../../src/base/internalKey';
import { Memtable, LookupResult, LookupValue } from '../../../src/engine/memtable/memtable';
import { KeyHash, MemtableFilter } from '../../../src/engine/memtable/memtableFilter';
import { nativeSkiplist } from '../../../src/engine/memtable/nativeSkiplist';
import { perf, resetPerfContext } from '../../../src/base/perfContext';
import { mulberry32 } from '../../../src/util/random';
import { Engine } from '../../../src/engine/engine';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

type SkipListModule = typeof import('../../../src/engine/memtable/skiplist');
type PerfModule = typeof import('../../../src/base/perfContext');
type FaceModule = typeof import('../../../src/engine/memtable/nativeSkiplist');

interface Side {
  skiplist: SkipListModule;
  perf: PerfModule;
  face: FaceModule;
}

function loadSide(native: boolean): Side {
  return loadWithEnv('SST_INGEST_NATIVE_SKIPLIST', native ? '1' : '0', () => ({
    skiplist: require('../../../src/engine/memtable/skiplist') as SkipListModule,
    perf: require('../../../src/base/perfContext') as PerfModule,
    face: require('../../../src/engine/memtable/nativeSkiplist') as FaceModule,
  }));
}

/** Random user keys with shared prefixes and lengths 0..12, so comparisons reach every branch. */
function randomUserKey(rand: () => number): Buffer {
  const length = Math.floor(rand() * 13);
  const key = Buffer.alloc(length);
  for (let i = 0; i < length; i++) key[i] = 97 + Math.floor(rand() * 3);
  return key;
}

/** Runs fn and returns its result with the comparisons it counted on that side. */
function counted<T>(side: Side, fn: () => T): { result: T; comparisons: number } {
  const before = side.perf.perf.keyComparisons;
  const result = fn();
  return { result, comparisons: side.perf.perf.keyComparisons - before };
}

describeIfNative('memtable skiplist search, native against JavaScript', () => {
  const native = loadSide(true);
  const js = loadSide(false);

  test('one side walks natively, the other in JavaScript', () => {
    expect(nativeSkiplist).not.toBeNull();
    expect(native.face.nativeSkiplist).not.toBeNull();
    expect(js.face.nativeSkiplist).toBeNull();
  });

  test('random inserts and seeks land alike, with the same comparisons, through arena growth', () => {
    const rand = mulberry32(21);
    // A small first arena, so the lists grow (copy) many times while the searches go on.
    const a = new native.skiplist.SkipList({ initialArenaBytes: 1024, seed: 5 });
    const b = new js.skiplist.SkipList({ initialArenaBytes: 1024, seed: 5 });
    const seen = new Set<string>();
    for (let i = 0; i < 20000; i++) {
      const userKey = randomUserKey(rand);
      const seq = 1 + Math.floor(rand() * 50);
      const id = `${userKey.toString('hex')}/${seq}`;
      if (seen.has(id)) continue;
      seen.add(id);
      const value = Buffer.from(`v${i}`);
      const inserted = [
        counted(native, () => a.insert(userKey, seq, ValueType.Value, value)),
        counted(js, () => b.insert(userKey, seq, ValueType.Value, value)),
      ];
      expect(inserted[0].comparisons).toBe(inserted[1].comparisons);
      if (i % 7 === 0) {
        const target = makeInternalKey(randomUserKey(rand), rand() < 0.5 ? MAX_SEQUENCE_NUMBER : Math.floor(rand() * 60), ValueType.Seek);
        const fromNative = counted(native, () => a.seekGE(target));
        const fromJs = counted(js, () => b.seekGE(target));
        expect(fromNative).toEqual(fromJs);
        const keyOf = (list: typeof a, node: number): string => (node === 0 ? 'none' : list.key(node).toString('hex'));
        expect(keyOf(a, fromNative.result)).toBe(keyOf(b, fromJs.result));
        if (fromNative.result !== 0)
          expect(counted(native, () => a.prevNode(fromNative.result))).toEqual(counted(js, () => b.prevNode(fromJs.result)));
      }
    }
    // Same order, node for node.
    const order = (list: typeof a): string[] => {
      const out: string[] = [];
      for (let n = list.firstNode(); n !== 0; n = list.nextNode(n)) out.push(list.key(n).toString('hex'));
      return out;
    };
    expect(order(a)).toEqual(order(b));
    expect(order(a)).toHaveLength(seen.size);
  });

  test('inserting an internal key twice fails the same assertion on both sides', () => {
    for (const side of [native, js]) {
      const list = new side.skiplist.SkipList();
      for (let i = 0; i < 100; i++) list.insert(Buffer.from(`k${i % 37}`), i, ValueType.Value, Buffer.from('v'));
      // Far from the last insert, so the search (not the ascending-insert shortcut) meets it.
      expect(() => list.insert(Buffer.from('k1'), 1, ValueType.Value, Buffer.from('again'))).toThrow(
        'assertion failed: skiplist insert of an internal key already present',
      );
    }
  });
});

describe('memtable Bloom filter', () => {
  test('never skips a key it holds, and skips most keys it lacks', () => {
    const filter = new MemtableFilter(64 * 1024 * 1024);
    expect(filter.lengthBytes).toBe(1024 * 1024);
    const rand = mulberry32(3);
    const added: Buffer[] = [];
    for (let i = 0; i < 300000; i++) {
      const k = Buffer.alloc(8);
      k.writeUInt32BE(Math.floor(rand() * 0xffffffff), 0);
      k.writeUInt32BE(i, 4);
      filter.add(k);
      added.push(k);
    }
    // Counted, not asserted key by key (300k expect() calls take seconds).
    const hash = new KeyHash();
    expect(added.filter((k) => !filter.mayContain(hash.of(k)))).toHaveLength(0);
    let falsePositives = 0;
    for (let i = 0; i < 100000; i++) if (filter.mayContain(hash.of(Buffer.from(`absent-${i}`)))) falsePositives++;
    // About 28 bits per key with 6 probes: well under 1% (a filter that answers yes to all fails).
    expect(falsePositives).toBeLessThan(1000);
  });

  test('a tiny arena still gets one line, and a saturated filter only costs searches', () => {
    const filter = new MemtableFilter(100);
    expect(filter.lengthBytes).toBe(64);
    for (let i = 0; i < 5000; i++) filter.add(Buffer.from(`k${i}`));
    let skipped = 0;
    const hash = new KeyHash();
    for (let i = 0; i < 5000; i++) if (!filter.mayContain(hash.of(Buffer.from(`k${i}`)))) skipped++;
    expect(skipped).toBe(0);
  });

  test('a memtable lookup of a key it lacks makes no skiplist comparison; of keys it holds, finds each', () => {
    const mt = new Memtable({ initialArenaBytes: 4 * 1024 * 1024 });
    for (let i = 0; i < 5000; i++)
      mt.add(i + 1, i % 10 === 0 ? ValueType.Deletion : ValueType.Value, Buffer.from(`key${i}`), Buffer.from(`v${i}`));
    const out: LookupValue = { value: null, seq: 0 };
    resetPerfContext();
    let skipped = 0;
    for (let i = 0; i < 5000; i++) {
      const before = perf.keyComparisons;
      expect(mt.get(Buffer.from(`other${i}`), MAX_SEQUENCE_NUMBER, out)).toBe(LookupResult.NotFound);
      if (perf.keyComparisons === before) skipped++;
    }
    expect(skipped).toBeGreaterThan(4900);
    for (let i = 0; i < 5000; i++) {
      const r = mt.get(Buffer.from(`key${i}`), MAX_SEQUENCE_NUMBER, out);
      expect(r).toBe(i % 10 === 0 ? LookupResult.Deleted : LookupResult.Found);
      expect(out.seq).toBe(i + 1);
    }
  });

  test('memtableFilter: false opens memtables without filters; the OPTIONS file records the choice', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memtable-filter-'));
    try {
      for (const filter of [true, false]) {
        const dir = path.join(root, String(filter));
        const engine = await Engine.open(dir, { memtableFilter: filter });
        try {
          for (let i = 0; i < 2000; i++) await engine.put(`key${i}`, `v${i}`);
          resetPerfContext();
          for (let i = 0; i < 200; i++) expect(engine.get(`absent${i}`)).toBeNull();
          // With the filter almost no absent key reaches the skiplist; without it each one compares.
          if (filter) expect(perf.keyComparisons).toBeLessThan(200);
          else expect(perf.keyComparisons).toBeGreaterThanOrEqual(200);
          expect(engine.get('key1999')?.toString()).toBe('v1999');
        } finally {
          await engine.close();
        }
        const options = fs.readdirSync(dir).filter((n) => n.startsWith('OPTIONS-'));
        const text = fs.readFileSync(path.join(dir, options[options.length - 1]), 'utf8');
        expect(text).toContain(`memtable_whole_key_filtering=${filter}`);
        expect(text).toContain(`memtable_prefix_bloom_size_ratio=${filter ? '0.015625' : '0.000000'}`);
      }
      await expect(Engine.open(path.join(root, 'bad'), { memtableFilter: 'yes' as unknown as boolean })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
      // Refused with the other options, before anything is created.
      expect(fs.existsSync(path.join(root, 'bad'))).toBe(false);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
