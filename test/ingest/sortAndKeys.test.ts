/**
 * The sort buffer's radix sort against a reference comparison sort (bytewise, stable), on keys
 * built to hit every path: long common prefixes (recursion on 8-byte chunks), keys ending inside
 * a chunk and zero bytes (length classes), duplicates (stability), ranges of every size class.
 * Each through the JavaScript path and the native one (native/rowSort.c), which also write the
 * same run files. And the key codec: order preservation and round trips for int64, uint64 and tuples.
 */
import { SortBuffer, shouldAdviseHugePages } from '../../src/ingest/sort/sortBuffer';
import { KeySpec, parseKeySpecText } from '../../src/ingest/rows/keySpec';
import { mulberry32 } from '../../src/util/random';
import { nativeImport } from '../../src/ingest/nativeImport';
import { nativeUtil } from '../../src/util/nativeUtil';
import { spillSortBuffer } from '../../src/ingest/sort/runFile';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { describeIfNative } from '../support/native';

/** The JavaScript sort and gather, and the native ones where the addon is built (CI requires it: test/support/native.ts). */
const PATHS: [string, boolean][] =
  nativeImport !== null
    ? [
        ['javascript', false],
        ['native', true],
      ]
    : [['javascript', false]];

const rng = mulberry32;

function randomKey(r: () => number): Buffer {
  const prefixes = ['', 'customer-0000', 'customer-0000-order-', '\u0000\u0000', 'a'];
  const prefix = Buffer.from(prefixes[Math.floor(r() * prefixes.length)], 'latin1');
  const tail = Buffer.alloc(Math.floor(r() * 12));
  for (let i = 0; i < tail.length; i++) tail[i] = r() < 0.3 ? 0 : r() < 0.5 ? 0x61 + Math.floor(r() * 3) : Math.floor(r() * 256);
  return Buffer.concat([prefix, tail]);
}

/** Adds `keys` (no values) to `buffer`, sorts it, and checks the order against a stable bytewise sort. */
function expectStableBytewiseSort(buffer: SortBuffer, keys: readonly Buffer[], useNative: boolean): void {
  keys.forEach((key, i) => {
    if (!buffer.reserve(key.length)) throw new Error(`key ${i} does not fit`);
    key.copy(buffer.arena, buffer.used);
    buffer.commit(key.length, 0, 0, i);
  });
  buffer.sort(useNative);
  const expected = keys.map((_, i) => i).sort((a, b) => Buffer.compare(keys[a], keys[b]) || a - b);
  expect(Array.from(buffer.order.subarray(0, keys.length))).toEqual(expected);
}

describe.each(PATHS)('SortBuffer (%s)', (_path, useNative) => {
  it.each([10, 30, 500, 3000, 20000])('sorts %i keys like a stable bytewise sort', (n) => {
    const r = rng(n);
    const buffer = new SortBuffer(8 << 20);
    const keys: Buffer[] = [];
    for (let i = 0; i < n; i++) {
      // Every fifth key repeats an earlier one, to check stability.
      const key = i > 0 && r() < 0.2 ? keys[Math.floor(r() * keys.length)] : randomKey(r);
      const value = Buffer.from(String(i));
      expect(buffer.reserve(key.length + value.length)).toBe(true);
      key.copy(buffer.arena, buffer.used);
      value.copy(buffer.arena, buffer.used + key.length);
      buffer.commit(key.length, value.length, 0, i);
      keys.push(key);
    }
    buffer.sort(useNative);
    const got = Array.from(buffer.order.subarray(0, n));
    const expected = keys.map((_, i) => i).sort((a, b) => Buffer.compare(keys[a], keys[b]) || a - b);
    expect(got).toEqual(expected);
  });

  // Keys of at most 8 bytes end inside the first chunk: the radix passes carry only the columns
  // later passes read, and skip the passes whose digit never varies (a constant high word here).
  it.each([
    [
      'int64-like keys with a constant high word',
      (r: () => number) => {
        const k = Buffer.alloc(8);
        k.writeUInt32BE(0x8000b5e6, 0);
        k.writeUInt32BE(Math.floor(r() * 2 ** 24), 4);
        return k;
      },
    ],
    [
      // One key going on past the first chunk: no group to recurse into, so the radix passes
      // need not carry the chunk columns, and must not read them afterwards.
      'short keys and a single longer one',
      (() => {
        let made = 0;
        return (r: () => number) =>
          Buffer.from(Array.from({ length: made++ === 100 ? 12 : 1 + Math.floor(r() * 8) }, () => Math.floor(r() * 256)));
      })(),
    ],
    [
      'short keys ending in zero bytes',
      (r: () => number) => Buffer.from(Array.from({ length: Math.floor(r() * 9) }, () => (r() < 0.4 ? 0 : Math.floor(r() * 4)))),
    ],
  ])('sorts %s like a stable bytewise sort', (_name, make) => {
    const r = rng(11);
    const keys: Buffer[] = [];
    for (let i = 0; i < 5000; i++) keys.push(i > 0 && r() < 0.1 ? keys[Math.floor(r() * keys.length)] : make(r));
    expectStableBytewiseSort(new SortBuffer(8 << 20), keys, useNative);
  });

  // A 300-byte common prefix: the radix recursion goes 8 bytes a level, and the native sort
  // switches to its merge sort past 256 bytes; long duplicates check stability there.
  it('sorts keys with a long common prefix and long duplicates like a stable bytewise sort', () => {
    const r = rng(29);
    const prefix = Buffer.alloc(300, 0x41);
    const keys: Buffer[] = [];
    for (let i = 0; i < 6000; i++) {
      const tail = Buffer.from(Array.from({ length: Math.floor(r() * 6) }, () => Math.floor(r() * 3)));
      keys.push(
        i > 0 && r() < 0.3 ? keys[Math.floor(r() * keys.length)] : Buffer.concat([prefix.subarray(0, 250 + Math.floor(r() * 51)), tail]),
      );
    }
    expectStableBytewiseSort(new SortBuffer(16 << 20), keys, useNative);
  });

  it('is empty and usable again after releasing its memory', () => {
    const buffer = new SortBuffer(8 << 20);
    fillRows(buffer, 2000, 10);
    buffer.releaseMemory();
    expect(buffer.count).toBe(0);
    expect(buffer.heldBytes()).toBe(0);
    const r = rng(5);
    expectStableBytewiseSort(
      buffer,
      Array.from({ length: 3000 }, () => randomKey(r)),
      useNative,
    );
  });

  it('reports full at its memory limit and counts what it holds', () => {
    const buffer = new SortBuffer(1 << 20);
    let n = 0;
    while (buffer.reserve(100)) buffer.commit(8, 92, 0, n++);
    expect(buffer.heldBytes()).toBeLessThanOrEqual(1 << 20);
    expect(buffer.heldBytes() + 150).toBeGreaterThan(1 << 20);
    buffer.clear();
    expect(buffer.reserve(100)).toBe(true);
  });
});

/** Fills a buffer with `n` rows: random keys, values of 0-300 bytes, a few larger than `bigValueBytes`. */
function fillRows(buffer: SortBuffer, n: number, bigValueBytes: number): void {
  const r = rng(n);
  for (let i = 0; i < n; i++) {
    const key = randomKey(r);
    const valueBytes = i % 500 === 7 ? bigValueBytes + Math.floor(r() * 100) : Math.floor(r() * 300);
    if (!buffer.reserve(key.length + valueBytes)) throw new Error(`row ${i} does not fit`);
    key.copy(buffer.arena, buffer.used);
    buffer.arena.fill(i & 0xff, buffer.used + key.length, buffer.used + key.length + valueBytes);
    // Sources and lines past one varint byte and past 32 bits.
    buffer.commit(key.length, valueBytes, i % 300, i * 2 ** 21 + 5);
  }
}

describe('huge-page advice', () => {
  it('follows SST_INGEST_HUGE_PAGES when set, and otherwise advises unless free memory is reported to a host', () => {
    expect(shouldAdviseHugePages(undefined, false)).toBe(true);
    expect(shouldAdviseHugePages(undefined, true)).toBe(false);
    expect(shouldAdviseHugePages('1', true)).toBe(true);
    expect(shouldAdviseHugePages('0', false)).toBe(false);
    expect(shouldAdviseHugePages('', true)).toBe(false);
  });

  it('is what a new sort buffer does, with the native codec', () => {
    const saved = process.env.SST_INGEST_HUGE_PAGES;
    try {
      process.env.SST_INGEST_HUGE_PAGES = '1';
      expect(new SortBuffer(4 << 20).hugePagesAdvised).toBe(nativeUtil !== null);
      process.env.SST_INGEST_HUGE_PAGES = '0';
      expect(new SortBuffer(4 << 20).hugePagesAdvised).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.SST_INGEST_HUGE_PAGES;
      else process.env.SST_INGEST_HUGE_PAGES = saved;
    }
  });
});

describe('spilled runs', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sortbuffer-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  // A 4 KiB spill chunk: rows larger than it take a chunk of their own, and 64 KiB sample
  // points fall inside and at the ends of gathered stretches.
  it.each(PATHS)('the %s gather writes the same run file and samples as the per-row path', (name, useNative) => {
    const make = (): SortBuffer => {
      const buffer = new SortBuffer(32 << 20, 1 << 16, 4096);
      fillRows(buffer, 20000, 5000);
      return buffer;
    };
    const reference = spillSortBuffer(make(), path.join(dir, `reference-${name}.run`), false);
    const info = spillSortBuffer(make(), path.join(dir, `${name}.run`), useNative);
    expect(info.entries).toBe(20000);
    expect(info.samples).toEqual(reference.samples);
    expect(info.samples.length).toBeGreaterThan(20);
    expect(info.bytes).toBe(reference.bytes);
    expect(fs.readFileSync(info.path).equals(fs.readFileSync(reference.path))).toBe(true);
  });
});

describeIfNative('native sort and gather arguments', () => {
  const codec = nativeImport!;
  it('refuse columns shorter than the count and keys outside the arena, writing nothing', () => {
    const buffer = new SortBuffer(1 << 20);
    fillRows(buffer, 100, 10);
    const short = new Uint32Array(10);
    const b = buffer as unknown as Record<string, Uint32Array & Uint8Array>;
    const cols = (order: Uint32Array): Parameters<typeof codec.sortEntries> => [
      buffer.arena,
      buffer.offset,
      buffer.keyLength,
      buffer.count,
      order,
      b.chunkHigh,
      b.chunkLow,
      b.lengthClass,
      b.orderScratch,
      b.highScratch,
      b.lowScratch,
      b.classScratch,
    ];
    expect(() => codec.sortEntries(...cols(short))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    buffer.offset[3] = buffer.arena.length - 1;
    const order = new Uint32Array(buffer.count).fill(7);
    expect(() => codec.sortEntries(...cols(order))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(Array.from(order.subarray(0, 5))).toEqual([7, 7, 7, 7, 7]);

    // Gathering: entry order[2] = 3 lies outside the arena; entries 0 and 1 are written first.
    const gatherOrder = Uint32Array.from([0, 1, 3, 4]);
    const out = Buffer.alloc(4096);
    const state = new Uint32Array(2);
    const gather = (): void =>
      codec.gatherRun(
        buffer.arena,
        gatherOrder,
        buffer.offset,
        buffer.keyLength,
        buffer.valueLength,
        buffer.source,
        buffer.line,
        4,
        out,
        4096,
        4096,
        state,
      );
    expect(gather).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(state[0]).toBe(2);
    expect(state[1]).toBeGreaterThan(0);
    gatherOrder[0] = 0xfffffff0;
    state.fill(0);
    expect(gather).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(Array.from(state)).toEqual([0, 0]);
  });
});

describe('key codec', () => {
  const int64 = KeySpec.forKeyFields(parseKeySpecText('1:int64'));
  const uint64 = KeySpec.forKeyFields(parseKeySpecText('1:uint64'));
  const tuple = KeySpec.forKeyFields(parseKeySpecText('name,n:int64,tag'));

  it('int64 and uint64 preserve numeric order and round-trip', () => {
    const r = rng(5);
    const values: bigint[] = [0n, 1n, -1n, (1n << 63n) - 1n, -(1n << 63n), 4294967296n, -4294967296n, 999999999999999n, 1000000000000000n];
    for (let i = 0; i < 300; i++) values.push(BigInt(Math.floor((r() - 0.5) * 2 ** 53)) * BigInt(Math.floor(r() * 1000) + 1));
    const encoded = values.map((v) => ({ v, k: int64.encode([v.toString()]) }));
    encoded.sort((a, b) => Buffer.compare(a.k, b.k));
    const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(encoded.map((e) => e.v)).toEqual(sorted);
    for (const e of encoded) expect(int64.decode(e.k)).toEqual([e.v.toString()]);
    expect(uint64.format(uint64.encode(['18446744073709551615']))).toBe('18446744073709551615');
  });

  it('refuses integers out of range or malformed', () => {
    for (const bad of ['9223372036854775808', '-9223372036854775809', '', '-', '1.5', ' 1', '0x10', '1e3']) {
      expect(() => int64.encode([bad])).toThrow(/not a valid int64/);
    }
    for (const bad of ['-1', '18446744073709551616']) expect(() => uint64.encode([bad])).toThrow(/not a valid uint64/);
  });

  it('tuples order by component, whatever the bytes, and round-trip', () => {
    const r = rng(9);
    const rows: [string, bigint, string][] = [];
    for (let i = 0; i < 400; i++) {
      const s = (n: number): string =>
        Array.from({ length: Math.floor(r() * n) }, () => ['a', 'b', '\u0000', '\u00ff', 'é'][Math.floor(r() * 5)]).join('');
      rows.push([s(4), BigInt(Math.floor((r() - 0.5) * 20)), s(3)]);
    }
    const cmpStr = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));
    const expected = [...rows].sort((a, b) => cmpStr(a[0], b[0]) || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) || cmpStr(a[2], b[2]));
    const got = rows
      .map((row) => ({ row, k: tuple.encode([row[0], row[1].toString(), row[2]]) }))
      .sort((a, b) => Buffer.compare(a.k, b.k) || cmpStr(a.row.join(), b.row.join()));
    expect(got.map((g) => g.row.map(String))).toEqual(expected.map((row) => row.map(String)));
    const plain = tuple.encode(['ab', '-3', 'z']);
    expect(tuple.decode(plain)).toEqual(['ab', '-3', 'z']);
    expect(tuple.format(tuple.encodeText('["a,b",5,"c"]'))).toBe('a,b,5,c');
    expect(tuple.encodeText('ab,-3,z')).toEqual(plain);
  });
});
