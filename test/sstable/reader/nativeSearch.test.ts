/**
 * The native block search (native/blockSearch.c through BlockIterator.seekGE) against the
 * JavaScript search it replaces, loaded side by side: the JavaScript one from a module registry
 * of its own with SST_INGEST_NATIVE_SEARCH=0. For every block format the reader searches (data
 * blocks in internal-key order, with and without a global seqno; bytewise blocks; index blocks
 * with length-prefixed and delta-encoded handles; restart intervals 1 to 16), every seek must land
 * on the same entry, with the same key, value and handle, leave the iterator where next() and
 * prev() continue alike, and count the same key comparisons. Corrupt blocks must fail the same
 * way (the native search declines, the JavaScript one reports), and the Bloom probe must answer
 * as the JavaScript probe does.
 */
import { describeIfNative } from '../../support/native';
import { loadWithEnv } from '../../support/isolatedModules';
import { ByteSink, zigzagEncode } from '../../../src/util/coding';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, typeOf, userKeyOf, ValueType } from '../../../src/base/internalKey';
import { BlockBuilder } from '../../../src/sstwriter/blockBuilder';
import { createFilterBuilder } from '../../../src/sstwriter/filterBuilder';
import { nativeSearch } from '../../../src/sstable/reader/nativeSearch';
import { Entry, prng, randomBytes, randomEntries, randomTarget } from './support';

type BlockModule = typeof import('../../../src/sstable/reader/block');
type PerfModule = typeof import('../../../src/base/perfContext');
type KeyCompareModule = typeof import('../../../src/base/keyCompare');
type FilterModule = typeof import('../../../src/sstable/reader/filterReader');
type SearchModule = typeof import('../../../src/sstable/reader/nativeSearch');

interface SearchSide {
  block: BlockModule;
  perf: PerfModule;
  keyCompare: KeyCompareModule;
  filter: FilterModule;
  search: SearchModule;
}

/** The reader's modules in a registry of their own, with the native search on or off. */
function loadSide(native: boolean): SearchSide {
  return loadWithEnv('SST_INGEST_NATIVE_SEARCH', native ? '1' : '0', () => ({
    block: require('../../../src/sstable/reader/block') as BlockModule,
    perf: require('../../../src/base/perfContext') as PerfModule,
    keyCompare: require('../../../src/base/keyCompare') as KeyCompareModule,
    filter: require('../../../src/sstable/reader/filterReader') as FilterModule,
    search: require('../../../src/sstable/reader/nativeSearch') as SearchModule,
  }));
}

type Order = 'internal' | 'bytewise';

interface Shape {
  order: Order;
  valueFormat: number; // BlockValueFormat
  globalSeqno: number;
}

function newIterator(side: SearchSide, contents: Buffer, shape: Shape) {
  const order = shape.order === 'internal' ? side.keyCompare.compareInternalKeyRanges : side.keyCompare.compareByteRanges;
  return new side.block.BlockIterator(side.block.Block.parse(contents, 'search.sst', 4096), {
    order,
    internalKeys: shape.order === 'internal',
    valueFormat: shape.valueFormat,
    globalSeqno: shape.globalSeqno,
  });
}

type Iterator = ReturnType<typeof newIterator>;

/** Where an iterator stands, as far as a caller can see. */
function stateOf(it: Iterator): string {
  if (!it.valid()) return 'invalid';
  return `${it.key().toString('hex')}=${it.value().toString('hex')}@${it.handleOffset}+${it.handleSize}`;
}

/** Runs fn on one side and returns what it saw and the comparisons it counted, or the error's text. */
function observe(side: SearchSide, fn: () => string): { seen: string; comparisons: number } {
  const before = side.perf.perf.keyComparisons;
  let seen: string;
  try {
    seen = fn();
  } catch (e) {
    seen = `${(e as Error).name}: ${(e as Error).message}`;
  }
  return { seen, comparisons: side.perf.perf.keyComparisons - before };
}

/** Seeks both iterators to each target, then walks a few entries each way; everything must agree. */
function expectSameSearches(native: SearchSide, js: SearchSide, contents: Buffer, shape: Shape, targets: Buffer[], rand: () => number) {
  const a = newIterator(native, contents, shape);
  const b = newIterator(js, contents, shape);
  for (const target of targets) {
    const steps = Math.floor(rand() * 4);
    const walk = (it: Iterator) => () => {
      it.seekGE(target);
      const seen = [stateOf(it)];
      for (let i = 0; i < steps && it.valid(); i++) {
        it.next();
        seen.push(stateOf(it));
      }
      if (it.valid()) {
        it.prev();
        seen.push(stateOf(it));
      }
      return seen.join(' ');
    };
    const fromNative = observe(native, walk(a));
    const fromJs = observe(js, walk(b));
    expect(fromNative).toEqual(fromJs);
  }
}

function build(entries: Array<{ key: Buffer; value: Buffer; delta?: Buffer }>, restartInterval: number, deltas = false): Buffer {
  const builder = new BlockBuilder({ restartInterval, valueDeltaEncoding: deltas });
  for (const e of entries) builder.add(e.key, e.value, e.delta);
  return Buffer.from(builder.finish());
}

/** Index entries: separator keys with block handles, full and delta-encoded. */
function indexEntries(rand: () => number, keys: Buffer[]): Array<{ key: Buffer; value: Buffer; delta: Buffer }> {
  let offset = 0;
  let previousSize = 0;
  return keys.map((key) => {
    const size = 50 + Math.floor(rand() * 70000);
    const full = new ByteSink(24);
    full.putVarint64(offset);
    full.putVarint64(size);
    const delta = new ByteSink(12);
    delta.putVarint64(zigzagEncode(size - previousSize));
    offset += size + 5;
    previousSize = size;
    return { key, value: Buffer.from(full.view()), delta: Buffer.from(delta.view()) };
  });
}

function distinctSorted(keys: Buffer[]): Buffer[] {
  const sorted = keys.slice().sort(Buffer.compare);
  return sorted.filter((k, i) => i === 0 || !k.equals(sorted[i - 1]));
}

describeIfNative('native block search', () => {
  const native = loadSide(true);
  const js = loadSide(false);

  test('one side searches natively, the other in JavaScript', () => {
    expect(nativeSearch).not.toBeNull();
    expect(native.search.nativeSearch).not.toBeNull();
    expect(js.search.nativeSearch).toBeNull();
  });

  test.each([1, 3, 16])('data blocks in internal-key order agree, restart interval %i', (interval) => {
    const rand = prng(100 + interval);
    const entries = randomEntries(rand, 400);
    const contents = build(entries, interval);
    const targets = Array.from({ length: 600 }, () => randomTarget(rand, entries));
    targets.push(
      makeInternalKey(Buffer.alloc(0), MAX_SEQUENCE_NUMBER, ValueType.Seek),
      makeInternalKey(Buffer.from([0xff, 0xff, 0xff]), 0, ValueType.Seek),
    );
    expectSameSearches(native, js, contents, { order: 'internal', valueFormat: 0, globalSeqno: -1 }, targets, rand);
  });

  test('a global seqno is compared as presented', () => {
    const rand = prng(7);
    const all = randomEntries(rand, 300);
    const onePerKey = all.filter((e, i) => i === 0 || !userKeyOf(all[i - 1].key).equals(userKeyOf(e.key)));
    const contents = build(onePerKey, 4);
    const targets: Buffer[] = [];
    for (let i = 0; i < 500; i++) {
      const e = onePerKey[Math.floor(rand() * onePerKey.length)];
      // Around the presented sequence 7: above it, at it, below it; and stored keys themselves.
      const seq = [8, 7, 6, 1000][Math.floor(rand() * 4)];
      targets.push(rand() < 0.2 ? e.key : makeInternalKey(userKeyOf(e.key), seq, rand() < 0.5 ? ValueType.Seek : typeOf(e.key)));
    }
    expectSameSearches(native, js, contents, { order: 'internal', valueFormat: 0, globalSeqno: 7 }, targets, rand);
  });

  test('bytewise blocks agree', () => {
    const rand = prng(8);
    const keys = distinctSorted(Array.from({ length: 300 }, () => randomBytes(rand, 1 + Math.floor(rand() * 14))));
    const entries = keys.map((key) => ({ key, value: randomBytes(rand, Math.floor(rand() * 30), 26) }));
    const targets = Array.from({ length: 500 }, () =>
      rand() < 0.4 ? keys[Math.floor(rand() * keys.length)] : randomBytes(rand, Math.floor(rand() * 14)),
    );
    for (const interval of [1, 16]) {
      expectSameSearches(native, js, build(entries, interval), { order: 'bytewise', valueFormat: 0, globalSeqno: -1 }, targets, rand);
    }
  });

  test.each([
    ['length-prefixed handles, user keys', 'bytewise', 1, 1],
    ['delta-encoded handles, user keys', 'bytewise', 2, 1],
    ['delta-encoded handles, user keys, restart interval 4', 'bytewise', 2, 4],
    ['length-prefixed handles, internal keys', 'internal', 1, 1],
    ['delta-encoded handles, internal keys, restart interval 3', 'internal', 2, 3],
  ] as Array<[string, Order, number, number]>)('index blocks agree: %s', (_name, order, valueFormat, interval) => {
    const rand = prng(valueFormat * 10 + interval);
    const userKeys = distinctSorted(Array.from({ length: 500 }, () => randomBytes(rand, 1 + Math.floor(rand() * 10))));
    const keys = order === 'internal' ? userKeys.map((k) => makeInternalKey(k, MAX_SEQUENCE_NUMBER, ValueType.Seek)) : userKeys;
    const entries = indexEntries(rand, keys);
    const contents =
      valueFormat === 2
        ? build(entries, interval, true)
        : build(
            entries.map(({ key, value }) => ({ key, value })),
            interval,
          );
    const targets = Array.from({ length: 500 }, () => {
      const k = rand() < 0.4 ? userKeys[Math.floor(rand() * userKeys.length)] : randomBytes(rand, 1 + Math.floor(rand() * 10));
      return order === 'internal' ? makeInternalKey(k, Math.floor(rand() * 100), ValueType.Seek) : k;
    });
    expectSameSearches(native, js, contents, { order, valueFormat, globalSeqno: -1 }, targets, rand);
  });

  test('keys and targets too short for a trailer under internal order are left to the JavaScript search', () => {
    // An iterator in internal-key order without `internalKeys` does not check key lengths itself;
    // the native search must not read a trailer that is not there.
    const rand = prng(12);
    const keys = distinctSorted(Array.from({ length: 80 }, () => randomBytes(rand, 1 + Math.floor(rand() * 6))));
    const entries = keys.map((key) => ({ key, value: randomBytes(rand, 5, 26) }));
    const contents = build(entries, 4);
    // Targets too, from 1 byte (no trailer at all) to 11.
    const targets = Array.from({ length: 60 }, () => randomBytes(rand, 1 + Math.floor(rand() * 11)));
    const order = (side: SearchSide) => side.keyCompare.compareInternalKeyRanges;
    const a = new native.block.BlockIterator(native.block.Block.parse(contents, 'short.sst', 0), { order: order(native) });
    const b = new js.block.BlockIterator(js.block.Block.parse(contents, 'short.sst', 0), { order: order(js) });
    for (const target of targets) {
      expect(observe(native, () => (a.seekGE(target), stateOf(a)))).toEqual(observe(js, () => (b.seekGE(target), stateOf(b))));
    }
  });

  test('keys longer than the iterator has room for: the native search declines, the JavaScript one grows', () => {
    const rand = prng(9);
    const entries: Entry[] = distinctSorted(Array.from({ length: 60 }, () => randomBytes(rand, 100 + Math.floor(rand() * 300)))).map(
      (u) => ({ key: makeInternalKey(u, 5, ValueType.Value), value: randomBytes(rand, 20, 26) }),
    );
    const targets = Array.from({ length: 100 }, () => randomTarget(rand, entries));
    expectSameSearches(native, js, build(entries, 8), { order: 'internal', valueFormat: 0, globalSeqno: -1 }, targets, rand);
  });

  test('corrupt entries fail alike: the native search declines and the JavaScript search reports them', () => {
    const rand = prng(10);
    const entries = randomEntries(rand, 120);
    const clean = build(entries, 4);
    const numRestarts = clean.readUInt32LE(clean.length - 4);
    const entriesEnd = clean.length - 4 - 4 * numRestarts;
    let corruptions = 0;
    for (let round = 0; round < 400; round++) {
      const contents = Buffer.from(clean);
      // Damage the entries only: Block.parse checks the restart array itself.
      for (let i = 0; i < 1 + Math.floor(rand() * 3); i++) contents[Math.floor(rand() * entriesEnd)] = Math.floor(rand() * 256);
      const targets = Array.from({ length: 8 }, () => randomTarget(rand, entries));
      const shape: Shape = { order: 'internal', valueFormat: 0, globalSeqno: -1 };
      const a = newIterator(native, contents, shape);
      const b = newIterator(js, contents, shape);
      for (const target of targets) {
        const fromNative = observe(native, () => (a.seekGE(target), stateOf(a)));
        const fromJs = observe(js, () => (b.seekGE(target), stateOf(b)));
        expect(fromNative.seen).toBe(fromJs.seen);
        if (fromJs.seen.startsWith('CorruptionError')) corruptions++;
        else expect(fromNative.comparisons).toBe(fromJs.comparisons);
      }
    }
    // The fuzzing must actually reach the error paths.
    expect(corruptions).toBeGreaterThan(10);
  });

  test('the Bloom probe answers as the JavaScript probe does, for keys in and out', () => {
    const rand = prng(11);
    const present = Array.from({ length: 5000 }, (_, i) => Buffer.from(`key-${i}-${Math.floor(rand() * 1e6)}`));
    const builder = createFilterBuilder(5, 10);
    if (builder === null) throw new Error('no FastLocalBloom builder');
    for (const k of present) builder.addKey(k);
    const contents = builder.finish();
    if (contents === null) throw new Error('empty filter');
    const a = native.filter.FilterReader.fromBlock(contents);
    const b = js.filter.FilterReader.fromBlock(contents);
    expect(a.kind).toBe('fastLocalBloom');
    for (const k of present) expect(a.keyMayMatch(k)).toBe(true);
    let falsePositives = 0;
    for (let i = 0; i < 20000; i++) {
      const k = randomBytes(rand, Math.floor(rand() * 24), 62);
      const answer = a.keyMayMatch(k);
      expect(answer).toBe(b.keyMayMatch(k));
      if (answer) falsePositives++;
    }
    // 10 bits per key: about 1% false positives; none at all would mean a probe that never looks.
    expect(falsePositives).toBeGreaterThan(20);
    expect(falsePositives).toBeLessThan(800);
  });
});
