/**
 * Shared helpers of the table reader tests (block.test.ts, tableReader.test.ts, verify.test.ts):
 * seeded random entries and seek targets with their sorted-array models, position and
 * corruption expectations, the RocksDB-written fixtures (fixtures/rocksdb-golden) and their JSON
 * listings, and two fixture rewriters (new properties; a partitioned index) that append new
 * blocks and a new footer to a copy.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Block, BlockIterator } from '../../../src/sstable/reader/block';
import { TableReader } from '../../../src/sstable/reader/tableReader';
import { compareByteRanges, compareInternal } from '../../../src/base/keyCompare';
import { BlockBuilder } from '../../../src/sstwriter/blockBuilder';
import { BLOCK_TRAILER_BYTES, computeBlockChecksum } from '../../../src/sstable/checksum';
import { decodeFooter, encodeFooter } from '../../../src/sstable/footer';
import { FOOTER_BYTES, META_PROPERTIES, Prop } from '../../../src/sstable/format';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, typeOf, userKeyOf, ValueType } from '../../../src/base/internalKey';
import { MetaindexBuilder } from '../../../src/sstwriter/metaindex';
import { buildPropertiesBlock } from '../../../src/sstwriter/propertiesBlock';
import { encodeBlockHandle, readBlockHandle } from '../../../src/util/coding';
import { CorruptionError } from '../../../src/util/errors';
import { mulberry32 } from '../../../src/util/random';
import { GOLDEN_DIR } from '../../support/paths';

export const FIXTURES = GOLDEN_DIR;

/**
 * A fresh temporary directory for the calling test file: created before its tests, removed
 * after them. Call at the top level of a test file; read the directory inside tests and hooks.
 */
export function useTmpDir(prefix: string): () => string {
  let dir: string | null = null;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  afterAll(() => {
    if (dir !== null) fs.rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (dir === null) throw new Error('useTmpDir: the directory exists only while the tests run');
    return dir;
  };
}

// --- random entries and their models -----------------------------------------------------------

export const prng = mulberry32;

export function randomBytes(rand: () => number, length: number, alphabet = 4): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = 0x61 + Math.floor(rand() * alphabet);
  return out;
}

export interface Entry {
  key: Buffer; // internal key
  value: Buffer;
}

/** Sorted distinct internal keys: user keys with shared prefixes, 1-3 versions each. */
export function randomEntries(rand: () => number, userKeys: number): Entry[] {
  const users = new Map<string, Buffer>();
  while (users.size < userKeys) {
    const k = randomBytes(rand, 1 + Math.floor(rand() * 12));
    users.set(k.toString('hex'), k);
  }
  const out: Entry[] = [];
  for (const u of users.values()) {
    const versions = 1 + Math.floor(rand() * 3);
    for (let v = 0; v < versions; v++) {
      const seq = 1 + Math.floor(rand() * 1000);
      const type = rand() < 0.8 ? ValueType.Value : rand() < 0.5 ? ValueType.Deletion : ValueType.Merge;
      out.push({
        key: makeInternalKey(u, seq, type),
        value: type === ValueType.Deletion ? Buffer.alloc(0) : randomBytes(rand, Math.floor(rand() * 40), 26),
      });
    }
  }
  out.sort((a, b) => compareInternal(a.key, b.key));
  // Drop exact duplicates (same user key and seq and type).
  return out.filter((e, i) => i === 0 || compareInternal(out[i - 1].key, e.key) !== 0);
}

/** Index of the first entry >= target (entries.length if none). */
export function lowerBoundIndex(entries: Entry[], target: Buffer): number {
  let i = 0;
  while (i < entries.length && compareInternal(entries[i].key, target) < 0) i++;
  return i;
}

export function expectAt(it: { valid(): boolean; key(): Buffer; value(): Buffer }, entries: Entry[], index: number): void {
  if (index < 0 || index >= entries.length) {
    expect(it.valid()).toBe(false);
    return;
  }
  expect(it.valid()).toBe(true);
  expect(it.key().toString('hex')).toBe(entries[index].key.toString('hex'));
  expect(it.value().toString('hex')).toBe(entries[index].value.toString('hex'));
}

/** A random seek target: an existing key, a key between keys, or a new user key. */
export function randomTarget(rand: () => number, entries: Entry[]): Buffer {
  const r = rand();
  const e = entries[Math.floor(rand() * entries.length)];
  if (r < 0.4) return e.key;
  if (r < 0.7) return makeInternalKey(userKeyOf(e.key), Math.floor(rand() * 1100), ValueType.Seek);
  return makeInternalKey(randomBytes(rand, 1 + Math.floor(rand() * 12)), MAX_SEQUENCE_NUMBER, ValueType.Seek);
}

export function expectCorruption(fn: () => unknown): CorruptionError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CorruptionError);
    return e as CorruptionError;
  }
  throw new Error('expected a CorruptionError, but nothing was thrown');
}

// --- RocksDB fixtures ------------------------------------------------------------------------

export interface Fixture {
  file: string;
  globalSeqno: number;
  entries: [string, number, number, string][];
  rangeTombstones: { startHex: string; endHex: string; seq: number }[];
  properties: { numeric: Record<string, number>; string: Record<string, string> };
}

export const fixtureNames = fs
  .readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .sort();
export const loadFixture = (name: string): Fixture => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8')) as Fixture;

export function scan(reader: TableReader): [string, number, number, string][] {
  const out: [string, number, number, string][] = [];
  const it = reader.newIterator();
  for (it.first(); it.valid(); it.next()) {
    const k = it.key();
    out.push([userKeyOf(k).toString('hex'), sequenceOf(k), typeOf(k), it.value().toString('hex')]);
  }
  it.close();
  return out;
}

// --- fixture rewriters --------------------------------------------------------------------------

/**
 * Copies a fixture (a name in FIXTURES, or an absolute path) to `outDir`/`outName`, rewriting
 * its properties block through `mutate`: the new properties block and a new metaindex are
 * appended where the footer was, followed by a new footer. The old blocks stay in place,
 * unreferenced, which readers do not mind. Returns the copy's path.
 */
export function rewriteProperties(outDir: string, fixture: string, outName: string, mutate: (map: Map<string, Buffer>) => void): string {
  const bytes = fs.readFileSync(path.isAbsolute(fixture) ? fixture : path.join(FIXTURES, fixture));
  const footer = decodeFooter(bytes.subarray(bytes.length - FOOTER_BYTES), bytes.length, fixture);
  const metaContents = bytes.subarray(footer.metaindexHandle.offset, footer.metaindexHandle.offset + footer.metaindexHandle.size);
  const metaIt = new BlockIterator(Block.parse(Buffer.from(metaContents), fixture, 0), { order: compareByteRanges });
  const handles = new Map<string, { offset: number; size: number }>();
  for (metaIt.first(); metaIt.valid(); metaIt.next()) handles.set(metaIt.key().toString('latin1'), readBlockHandle(metaIt.value(), 0));
  const propsHandle = handles.get(META_PROPERTIES) as { offset: number; size: number };
  const propsIt = new BlockIterator(
    Block.parse(Buffer.from(bytes.subarray(propsHandle.offset, propsHandle.offset + propsHandle.size)), fixture, 0),
    { order: compareByteRanges },
  );
  const map = new Map<string, Buffer>();
  for (propsIt.first(); propsIt.valid(); propsIt.next()) map.set(propsIt.key().toString('utf8'), Buffer.from(propsIt.value()));
  mutate(map);

  const parts: Buffer[] = [bytes.subarray(0, bytes.length - FOOTER_BYTES)];
  let offset = bytes.length - FOOTER_BYTES;
  const appendBlock = (contents: Buffer): { offset: number; size: number } => {
    const withTrailer = Buffer.alloc(contents.length + BLOCK_TRAILER_BYTES);
    contents.copy(withTrailer);
    withTrailer[contents.length] = 0;
    withTrailer.writeUInt32LE(computeBlockChecksum(footer.checksumType, withTrailer, 0, contents.length, 0), contents.length + 1);
    parts.push(withTrailer);
    const handle = { offset, size: contents.length };
    offset += withTrailer.length;
    return handle;
  };
  handles.set(META_PROPERTIES, appendBlock(buildPropertiesBlock(map).contents));
  const meta = new MetaindexBuilder();
  for (const [name, handle] of handles) meta.add(name, handle);
  const metaindexHandle = appendBlock(meta.finish());
  parts.push(
    encodeFooter({
      checksumType: footer.checksumType,
      metaindexHandle,
      indexHandle: footer.indexHandle,
      formatVersion: footer.formatVersion,
    }),
  );
  const out = path.join(outDir, outName);
  fs.writeFileSync(out, Buffer.concat(parts));
  return out;
}

/**
 * Copies a fixture whose index uses user keys and restart interval 1 (so every value is a full
 * handle), splitting its index into `partitions` index partitions plus a top-level index
 * (RocksDB's kTwoLevelIndexSearch layout), appended at the end with new properties (index type
 * 2), metaindex and footer. The copy (and an intermediate `outName`.tail) go to `outDir`.
 */
export function partitionIndex(outDir: string, fixture: string, outName: string, partitions: number): string {
  const source = path.join(FIXTURES, fixture);
  const reader = TableReader.open(source);
  const separators: { key: Buffer; handle: Buffer }[] = [];
  const index = reader.newIndexIterator();
  for (index.first(); index.valid(); index.next())
    separators.push({ key: Buffer.from(index.key()), handle: encodeBlockHandle({ offset: index.handleOffset, size: index.handleSize }) });
  const checksumType = reader.footer.checksumType;
  const formatVersion = reader.footer.formatVersion;
  reader.close();
  expect(separators.length).toBeGreaterThan(partitions);

  const bytes = fs.readFileSync(source);
  const parts: Buffer[] = [bytes.subarray(0, bytes.length - FOOTER_BYTES)];
  let offset = bytes.length - FOOTER_BYTES;
  const appendBlock = (contents: Buffer): { offset: number; size: number } => {
    const withTrailer = Buffer.alloc(contents.length + BLOCK_TRAILER_BYTES);
    contents.copy(withTrailer);
    withTrailer.writeUInt32LE(computeBlockChecksum(checksumType, withTrailer, 0, contents.length, 0), contents.length + 1);
    parts.push(withTrailer);
    const handle = { offset, size: contents.length };
    offset += withTrailer.length;
    return handle;
  };
  const top = new BlockBuilder({ restartInterval: 1, valueDeltaEncoding: true });
  const perPartition = Math.ceil(separators.length / partitions);
  for (let p = 0; p < separators.length; p += perPartition) {
    const partition = new BlockBuilder({ restartInterval: 1, valueDeltaEncoding: true });
    const chunk = separators.slice(p, p + perPartition);
    for (const s of chunk) partition.add(s.key, s.handle);
    top.add(chunk[chunk.length - 1].key, encodeBlockHandle(appendBlock(Buffer.from(partition.finish()))));
  }
  const topHandle = appendBlock(Buffer.from(top.finish()));
  const indexTail = path.join(outDir, `${outName}.tail`);
  fs.writeFileSync(
    indexTail,
    Buffer.concat([
      ...parts,
      encodeFooter({
        checksumType,
        metaindexHandle: decodeFooter(bytes.subarray(bytes.length - FOOTER_BYTES), bytes.length, fixture).metaindexHandle,
        indexHandle: topHandle,
        formatVersion,
      }),
    ]),
  );
  // Now point the properties at the new index type (reusing rewriteProperties on the new file).
  return rewriteProperties(outDir, indexTail, outName, (map) => {
    const type = Buffer.alloc(4);
    type.writeUInt32LE(2, 0);
    map.set(Prop.IndexType, type);
    map.delete(Prop.IndexSize); // not recomputed here
  });
}
