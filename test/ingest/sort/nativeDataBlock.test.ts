/**
 * The data-block layout is written twice: by the table writer's BlockBuilder
 * (src/sstwriter/blockBuilder.ts) and by the native merge's block encoder (native/mergeBlocks.c,
 * `append` and `finish_block`). This test holds the two to the same bytes: the same sorted
 * entries go through mergeBlocks (one run, driven directly through src/ingest/nativeImport.ts)
 * and, block by block as the native merge cut them, through a BlockBuilder; every block must be
 * byte-identical, and the native block's first and last keys and filter hashes must be its
 * entries'. The entries reach every varint width the layout has (keys and values of 0 to 20,000
 * bytes), shared prefixes long and short, and restart intervals of 1, 3 and 16.
 *
 * Where the blocks are cut, and everything around them (index, filter, properties, files), is
 * test/ingest/sort/nativeMerge.test.ts, which compares whole files with the JavaScript merge's.
 * Without the native addon this suite skips, or fails under SST_INGEST_REQUIRE_NATIVE=1.
 */
import * as fs from 'fs';
import * as path from 'path';
import { FIRST_ENTRY_OFFSET, RunWriter } from '../../../src/ingest/sort/runFile';
import { nativeImport } from '../../../src/ingest/nativeImport';
import { BlockBuilder } from '../../../src/sstwriter/blockBuilder';
import { ValueType, makeInternalKey } from '../../../src/base/internalKey';
import { xxph3, xxph3Result } from '../../../src/sstable/hash';
import { mulberry32 } from '../../../src/util/random';
import { describeIfNative } from '../../support/native';
import { tempDir } from '../support';

/** The io slots this test reads and writes (MIO_* in native/mergeBlocks.h; Io in src/ingest/sort/nativeMerge.ts). */
const IO_BLOCK_BYTES = 6;
const IO_BLOCK_ENTRIES = 7;
const IO_FIRST_KEY_BYTES = 10;
const IO_LAST_KEY_BYTES = 11;
const IO_WRITING = 18;
const IO_REPORT_DUPLICATES = 19;
const IO_SLOTS = 21;
/** mergeBlocks' stop codes this test expects (MERGE_* in native/mergeBlocks.h). */
const MERGE_END = 0;
const MERGE_BLOCK = 1;
const MERGE_READER_DONE = 6;
const KEY_SLOT_BYTES = 1024;

interface Entry {
  key: Buffer;
  value: Buffer;
}

interface NativeBlock {
  contents: Buffer;
  entries: number;
  firstKey: Buffer;
  lastKey: Buffer;
  hashes: Array<[number, number]>;
}

/** Distinct keys in order, sharing prefixes of every length, with values of every varint width. */
function makeEntries(seed: number, count: number): Entry[] {
  const r = mulberry32(seed);
  const prefixes = ['', 'acct/', 'acct/0001/', 'z'.repeat(150)];
  const byHex = new Map<string, Entry>();
  while (byHex.size < count) {
    const tail = Buffer.alloc(r() < 0.9 ? 1 + Math.floor(r() * 20) : 100 + Math.floor(r() * 200));
    for (let j = 0; j < tail.length; j++) tail[j] = r() < 0.2 ? 0 : Math.floor(r() * 256);
    const key = Buffer.concat([Buffer.from(prefixes[Math.floor(r() * prefixes.length)]), tail]);
    const size = r();
    const valueBytes = size < 0.2 ? 0 : size < 0.9 ? Math.floor(r() * 300) : size < 0.99 ? 1000 + Math.floor(r() * 3000) : 20000;
    byHex.set(key.toString('hex'), { key, value: Buffer.alloc(valueBytes, 97 + (byHex.size % 26)) });
  }
  return [...byHex.values()].sort((a, b) => Buffer.compare(a.key, b.key));
}

/** The entries as one run file's bytes (RunWriter's layout, which the merge reads). */
function runBytes(file: string, entries: Entry[]): Buffer {
  const w = new RunWriter(file);
  entries.forEach((e, i) => w.add(Buffer.concat([e.key, e.value]), 0, e.key.length, e.value.length, 0, i + 1));
  w.finish();
  return fs.readFileSync(file);
}

/** Every data block mergeBlocks makes of the run, in one file (no cut), with its keys and hashes. */
function nativeBlocks(run: Buffer, blockSizeBytes: number, restartInterval: number): NativeBlock[] {
  const codec = nativeImport!;
  const ctx = new Uint8Array(new ArrayBuffer(codec.mergeContextBytes(1)));
  const deviationLimitBytes = Math.floor((blockSizeBytes * 90 + 99) / 100);
  codec.mergeInit(ctx, 1, blockSizeBytes, deviationLimitBytes, restartInterval, true, Number.MAX_SAFE_INTEGER, null, null);
  // Outputs larger than any block of these entries: no NEED_ROOM stop. The native merge keeps
  // raw pointers to everything lent to it, so all of it stays reachable from `lent`, which the
  // loop uses on every call (a typed array collected meanwhile would be written after its free).
  const lent = {
    run,
    block: Buffer.alloc(1 << 20),
    restarts: new Uint32Array((1 << 16) + 1),
    hashLo: new Uint32Array(1 << 16),
    hashHi: new Uint32Array(1 << 16),
    keys: Buffer.alloc(3 * KEY_SLOT_BYTES),
  };
  codec.mergeSetReader(ctx, 0, lent.run, FIRST_ENTRY_OFFSET, lent.run.length, true);
  codec.mergeSetOutput(ctx, lent.block, lent.restarts, lent.hashLo, lent.hashHi, lent.keys);
  const io = new Float64Array(IO_SLOTS);
  io[IO_WRITING] = 1;
  io[IO_REPORT_DUPLICATES] = 1;
  const blocks: NativeBlock[] = [];
  for (;;) {
    const code = codec.mergeBlocks(ctx, io);
    const { block, hashLo, hashHi, keys } = lent;
    if (io[IO_BLOCK_BYTES] > 0) {
      const entries = io[IO_BLOCK_ENTRIES];
      blocks.push({
        contents: Buffer.from(block.subarray(0, io[IO_BLOCK_BYTES])),
        entries,
        firstKey: Buffer.from(keys.subarray(0, io[IO_FIRST_KEY_BYTES])),
        lastKey: Buffer.from(keys.subarray(KEY_SLOT_BYTES, KEY_SLOT_BYTES + io[IO_LAST_KEY_BYTES])),
        hashes: Array.from({ length: entries }, (_, i): [number, number] => [hashLo[i], hashHi[i]]),
      });
    }
    if (code === MERGE_END) return blocks;
    if (code !== MERGE_BLOCK && code !== MERGE_READER_DONE) throw new Error(`mergeBlocks stopped with code ${code}`);
  }
}

function internalKey(userKey: Buffer): Buffer {
  return makeInternalKey(userKey, 0, ValueType.Value);
}

describeIfNative("the native data-block encoder against BlockBuilder's", () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir('native-data-block-');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([
    [64, 1],
    [512, 3],
    [4096, 16],
    [4096, 1],
    [16384, 16],
  ])('writes byte-identical blocks: %i-byte blocks, restart interval %i', (blockSizeBytes, restartInterval) => {
    const entries = makeEntries(blockSizeBytes + restartInterval, 3000);
    const run = runBytes(path.join(dir, `run-${blockSizeBytes}-${restartInterval}.run`), entries);
    const blocks = nativeBlocks(run, blockSizeBytes, restartInterval);
    expect(blocks.length).toBeGreaterThan(blockSizeBytes > 4096 ? 10 : 40);
    const builder = new BlockBuilder({ restartInterval });
    // One expect per kind at the end: thousands of blocks, and a mismatch names its block.
    const differences: string[] = [];
    let next = 0;
    blocks.forEach((b, n) => {
      const mine = entries.slice(next, next + b.entries);
      next += b.entries;
      builder.reset();
      for (const e of mine) builder.add(internalKey(e.key), e.value);
      const expected = builder.finish();
      if (!b.contents.equals(expected)) differences.push(`block ${n}: ${b.contents.toString('hex')} != ${expected.toString('hex')}`);
      if (!b.firstKey.equals(internalKey(mine[0].key))) differences.push(`block ${n}: first key`);
      if (!b.lastKey.equals(internalKey(mine[mine.length - 1].key))) differences.push(`block ${n}: last key`);
      b.hashes.forEach(([lo, hi], i) => {
        xxph3(mine[i].key, 0, mine[i].key.length);
        if (lo !== xxph3Result.lo || hi !== xxph3Result.hi) differences.push(`block ${n}: hash of entry ${i}`);
      });
    });
    expect(differences).toEqual([]);
    expect(next).toBe(entries.length);
  });
});
