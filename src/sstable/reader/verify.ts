/**
 * Whole-file verification of an open table (TableReader.verify(), `ingest sst verify`, and
 * ingestion of external files with verifyChecksums).
 *
 * Contract: reads every block of the file again, ignoring the block cache and the reader's
 * verifyChecksums option, and throws a CorruptionError (file, block offset, reason) for the first
 * problem found, in this order:
 * 1. the metaindex: checksum, names strictly increasing;
 * 2. every meta block's checksum (properties with the global-seqno allowance, every partition of
 *    a partitioned filter, the range_del block, any other block the metaindex names);
 * 3. the index: checksum and restart entries; for a partitioned index, every partition too, the
 *    last separator of each equal to its top-level key, and their number against the property;
 * 4. the data blocks in index order: checksum and restart entries, index separators strictly
 *    increasing, blocks in file order without overlap, keys strictly increasing inside and across
 *    blocks (as stored: no global seqno), each block's keys above the previous separator and at
 *    most its own, no range-deletion or seek entries, and the filter accepting every key;
 * 5. the properties against what was read (only those the file records): entry, data block,
 *    deletion, merge and range-deletion counts, raw key and value bytes, data and index sizes.
 * It never changes the reader's state, except perf counters (block reads, key comparisons,
 * Bloom checks). It returns the sizes of the largest user key (range tombstone bounds included)
 * and the largest value it read, so a caller with limits on them (the server's SST uploads)
 * needs no second pass over the file.
 */
import { perf } from '../../base/perfContext';
import { compareByteRanges, compareInternalKeyRanges } from '../../base/keyCompare';
import { TRAILER_BYTES, typeOf, ValueType } from '../../base/internalKey';
import { BlockHandle } from '../../util/coding';
import { CorruptionError } from '../../util/errors';
import { BLOCK_TRAILER_BYTES } from '../checksum';
import { Footer } from '../footer';
import { META_PROPERTIES, META_RANGE_DEL, PARTITIONED_FILTER_PREFIX, Prop } from '../format';
import { TableProperties } from '../properties';
import { Block, BlockIterator, BlockValueFormat } from './block';
import { BlockCacheHandle, UncachedBlock } from './blockCache';
import { BlockFetcher } from './blockFetcher';
import { IndexIterator } from './tableIterator';

/** Loads one index partition (offset and size of its contents) as a released-when-done block. */
export type IndexPartitionLoader = (offset: number, size: number) => BlockCacheHandle;

/** What verification needs of an open table: its decoded metadata and its own readers. */
export interface VerifiableTable {
  readonly path: string;
  readonly footer: Footer;
  readonly properties: TableProperties;
  readonly metaHandles: ReadonlyMap<string, BlockHandle>;
  /** The range tombstones as user keys (only their sizes are checked). */
  readonly tombstones: ReadonlyArray<{ readonly start: Buffer; readonly end: Buffer }>;
  readonly indexKeyIsUserKey: boolean;
  readonly indexValueFormat: BlockValueFormat;
  readonly partitionedIndex: boolean;
  readonly blocks: BlockFetcher;
  /** An iterator over one index block (or none yet) with the table's index encodings. */
  indexBlockIterator(block: Block | null): BlockIterator;
  /** The table's index over `indexBlock`, partitions loaded through `loadPartition`. */
  indexIterator(indexBlock: Block, loadPartition: IndexPartitionLoader): IndexIterator;
  /** The properties block as name → value, read (and checked, if asked) from the file. */
  readPropertiesContents(handle: BlockHandle, verify: boolean): Map<string, Buffer>;
  /** False only if the table's filter proves `userKey` absent. */
  keyMayMatch(userKey: Uint8Array): boolean;
}

/** The largest user key (point keys and range tombstone bounds) and value of a verified table. */
export interface TableEntrySizes {
  largestKeyBytes: number;
  largestValueBytes: number;
}

/** What the data blocks and range tombstones hold, to be checked against the properties. */
interface ContentTally extends TableEntrySizes {
  numDataBlocks: number;
  numEntries: number;
  numDeletions: number;
  numMerges: number;
  numRangeDeletions: number;
  rawKeyBytes: number;
  rawValueBytes: number;
  /** End of the last data block read, trailer included: the data size. */
  dataEndBytes: number;
}

/** Type byte of a deletion with a timestamp (kTypeDeletionWithTimestamp); counted as a deletion. */
const DELETION_WITH_TIMESTAMP = 0x14;

/** Checks the whole table (see the module comment); throws the first problem found. */
export function verifyTable(table: VerifiableTable): TableEntrySizes {
  verifyMetaBlocks(table);
  const { indexBlock, indexBytes } = verifyIndex(table);
  const tally: ContentTally = {
    numDataBlocks: 0,
    numEntries: 0,
    numDeletions: 0,
    numMerges: 0,
    numRangeDeletions: 0,
    rawKeyBytes: 0,
    rawValueBytes: 0,
    dataEndBytes: 0,
    largestKeyBytes: 0,
    largestValueBytes: 0,
  };
  verifyDataBlocks(table, indexBlock, tally);
  for (const t of table.tombstones) {
    tally.numRangeDeletions++;
    tally.rawKeyBytes += t.start.length + TRAILER_BYTES;
    tally.rawValueBytes += t.end.length;
    tally.largestKeyBytes = Math.max(tally.largestKeyBytes, t.start.length, t.end.length);
  }
  tally.numEntries += tally.numRangeDeletions;
  tally.numDeletions += tally.numRangeDeletions;
  verifyProperties(table, tally, indexBytes);
  return { largestKeyBytes: tally.largestKeyBytes, largestValueBytes: tally.largestValueBytes };
}

function fail(table: VerifiableTable, offset: number, reason: string): never {
  throw new CorruptionError(table.path, offset, reason);
}

/** Steps 1 and 2: the metaindex's checksum and order, then every block it names. */
function verifyMetaBlocks(table: VerifiableTable): void {
  const metaindex = table.footer.metaindexHandle;
  const names: string[] = [];
  const it = new BlockIterator(Block.parse(table.blocks.readBlock(metaindex, 'metaindex', true), table.path, metaindex.offset), {
    order: compareByteRanges,
  });
  for (it.first(); it.valid(); it.next()) names.push(it.key().toString('latin1'));
  for (let i = 1; i < names.length; i++) {
    if (names[i - 1] >= names[i]) fail(table, metaindex.offset, `metaindex names out of order: "${names[i - 1]}" before "${names[i]}"`);
  }
  for (const [name, handle] of table.metaHandles) {
    if (name === META_PROPERTIES) {
      table.readPropertiesContents(handle, true);
    } else if (name.startsWith(PARTITIONED_FILTER_PREFIX)) {
      const partitions = table.indexBlockIterator(Block.parse(table.blocks.readBlock(handle, 'filter', true), table.path, handle.offset));
      for (partitions.first(); partitions.valid(); partitions.next())
        table.blocks.readBlock({ offset: partitions.handleOffset, size: partitions.handleSize }, 'filter', true);
    } else {
      table.blocks.readBlock(handle, name === META_RANGE_DEL ? 'range_del' : 'filter', true);
    }
  }
}

/** An index partition read and verified from the file, in no cache. */
function loadVerifiedIndexPartition(table: VerifiableTable, offset: number, size: number): BlockCacheHandle {
  return new UncachedBlock(Block.parse(table.blocks.readBlock({ offset, size }, 'index', true), table.path, offset));
}

/** Step 3: the index block (and its partitions); returns it and the index's bytes without trailer. */
function verifyIndex(table: VerifiableTable): { indexBlock: Block; indexBytes: number } {
  const indexHandle = table.footer.indexHandle;
  const indexContents = table.blocks.readBlock(indexHandle, 'index', true);
  const indexBlock = Block.parse(indexContents, table.path, indexHandle.offset);
  const hasValueLength = table.indexValueFormat !== BlockValueFormat.DeltaHandle;
  checkRestartEntries(indexBlock, hasValueLength);
  let indexBytes = indexContents.length;
  if (!table.partitionedIndex) return { indexBlock, indexBytes };
  // Each partition is a valid index block whose last separator is its top-level key.
  let partitions = 0;
  const top = table.indexBlockIterator(indexBlock);
  const partition = table.indexBlockIterator(null);
  for (top.first(); top.valid(); top.next()) {
    const block = loadVerifiedIndexPartition(table, top.handleOffset, top.handleSize).block;
    checkRestartEntries(block, hasValueLength);
    partition.reset(block);
    partition.last();
    if (partition.valid() && !partition.key().equals(top.key()))
      fail(table, top.handleOffset, `index partition ${partitions}'s last separator differs from its top-level key`);
    indexBytes += block.data.length;
    partitions++;
  }
  const props = table.properties;
  if (props.raw.has(Prop.IndexPartitions) && partitions !== props.indexPartitions) {
    fail(
      table,
      indexHandle.offset,
      `property ${Prop.IndexPartitions} is ${props.indexPartitions} but the top-level index lists ${partitions}`,
    );
  }
  return { indexBlock, indexBytes };
}

/** The previous key (across blocks), copied: the iterator's views die when it moves. */
class KeyCopy {
  bytes = Buffer.allocUnsafe(64);
  /** -1 before the first key. */
  length = -1;

  set(key: Buffer): void {
    if (key.length > this.bytes.length) this.bytes = Buffer.allocUnsafe(2 * key.length);
    key.copy(this.bytes, 0);
    this.length = key.length;
  }

  view(): Buffer {
    return this.bytes.subarray(0, this.length);
  }
}

/** Step 4: every data block in index order, tallied into `tally`. */
function verifyDataBlocks(table: VerifiableTable, indexBlock: Block, tally: ContentTally): void {
  const index = table.indexIterator(indexBlock, (offset, size) => loadVerifiedIndexPartition(table, offset, size));
  // Keys are checked as stored (no global seqno).
  const data = new BlockIterator(null, { order: compareInternalKeyRanges, internalKeys: true });
  const previousKey = new KeyCopy();
  let previousSeparator: Buffer | null = null;
  for (index.first(); index.valid(); index.next()) {
    const separator = Buffer.from(index.key());
    const handle = { offset: index.handleOffset, size: index.handleSize };
    if (previousSeparator !== null && compareSeparators(table, separator, previousSeparator) <= 0) {
      fail(table, table.footer.indexHandle.offset, `index separators out of order at data block ${tally.numDataBlocks}`);
    }
    if (handle.offset < tally.dataEndBytes)
      fail(table, handle.offset, `data block ${tally.numDataBlocks} overlaps the previous one (ends at ${tally.dataEndBytes})`);
    const block = Block.parse(table.blocks.readBlock(handle, 'data', true), table.path, handle.offset);
    checkRestartEntries(block, true);
    data.reset(block);
    verifyDataBlockEntries(table, data, handle.offset, previousSeparator, separator, previousKey, tally);
    previousSeparator = separator;
    tally.dataEndBytes = handle.offset + handle.size + BLOCK_TRAILER_BYTES;
    tally.numDataBlocks++;
  }
}

/**
 * One data block's entries (`data` reset to it): order against `previousKey` (updated as it
 * goes), the separators around the block, entry types and the filter.
 */
function verifyDataBlockEntries(
  table: VerifiableTable,
  data: BlockIterator,
  blockOffset: number,
  previousSeparator: Buffer | null,
  separator: Buffer,
  previousKey: KeyCopy,
  tally: ContentTally,
): void {
  let firstInBlock = true;
  for (data.first(); data.valid(); data.next()) {
    const key = data.key();
    if (firstInBlock) {
      if (previousSeparator !== null && compareWithSeparator(table, key, previousSeparator) <= 0) {
        fail(table, blockOffset, `first key of data block ${tally.numDataBlocks} is not above the previous block's index separator`);
      }
      firstInBlock = false;
    }
    if (previousKey.length >= 0 && data.compareKeyTo(previousKey.bytes, 0, previousKey.length) <= 0) {
      fail(table, blockOffset, `keys out of order at entry offset ${data.currentEntryOffset()} of data block ${tally.numDataBlocks}`);
    }
    const type = typeOf(key);
    if (type === ValueType.Deletion || type === ValueType.SingleDeletion || type === DELETION_WITH_TIMESTAMP) tally.numDeletions++;
    else if (type === ValueType.Merge) tally.numMerges++;
    else if (type === ValueType.RangeDeletion || type === ValueType.Seek)
      fail(table, blockOffset, `entry of type 0x${type.toString(16)} in a data block`);
    if (!table.keyMayMatch(key.subarray(0, key.length - TRAILER_BYTES)))
      fail(table, blockOffset, 'the filter rejects a key stored in the table');
    tally.numEntries++;
    const valueBytes = data.value().length;
    tally.rawKeyBytes += key.length;
    tally.rawValueBytes += valueBytes;
    if (key.length - TRAILER_BYTES > tally.largestKeyBytes) tally.largestKeyBytes = key.length - TRAILER_BYTES;
    if (valueBytes > tally.largestValueBytes) tally.largestValueBytes = valueBytes;
    previousKey.set(key);
  }
  if (!firstInBlock && compareWithSeparator(table, previousKey.view(), separator) > 0) {
    fail(table, blockOffset, `last key of data block ${tally.numDataBlocks} is above its index separator`);
  }
}

/** Step 5: the recorded properties against the tally. */
function verifyProperties(table: VerifiableTable, tally: ContentTally, indexBytes: number): void {
  const props = table.properties;
  const expect = (name: string, recorded: number, actual: number): void => {
    if (props.raw.has(name) && recorded !== actual) {
      fail(table, table.metaHandles.get(META_PROPERTIES)?.offset ?? 0, `property ${name} is ${recorded} but the table holds ${actual}`);
    }
  };
  expect(Prop.NumEntries, props.numEntries, tally.numEntries);
  expect(Prop.NumDataBlocks, props.numDataBlocks, tally.numDataBlocks);
  expect(Prop.DeletedKeys, props.numDeletions, tally.numDeletions);
  expect(Prop.MergeOperands, props.numMergeOperands, tally.numMerges);
  expect(Prop.NumRangeDeletions, props.numRangeDeletions, tally.numRangeDeletions);
  expect(Prop.RawKeySize, props.rawKeySize, tally.rawKeyBytes);
  expect(Prop.RawValueSize, props.rawValueSize, tally.rawValueBytes);
  expect(Prop.DataSize, props.dataSize, tally.dataEndBytes);
  expect(Prop.IndexSize, props.indexSize, indexBytes + BLOCK_TRAILER_BYTES);
}

/** Compares an internal key with an index separator under the index's key kind. */
function compareWithSeparator(table: VerifiableTable, key: Buffer, separator: Buffer): number {
  perf.keyComparisons++;
  if (table.indexKeyIsUserKey) return compareByteRanges(key, 0, key.length - TRAILER_BYTES, separator, 0, separator.length);
  return compareInternalKeyRanges(key, 0, key.length, separator, 0, separator.length);
}

function compareSeparators(table: VerifiableTable, a: Buffer, b: Buffer): number {
  perf.keyComparisons++;
  if (table.indexKeyIsUserKey) return compareByteRanges(a, 0, a.length, b, 0, b.length);
  return compareInternalKeyRanges(a, 0, a.length, b, 0, b.length);
}

/** Decodes every restart entry's key offset: a malformed restart entry throws a CorruptionError. */
function checkRestartEntries(block: Block, hasValueLength: boolean): void {
  for (let i = 0; i < block.numRestarts; i++) block.restartKeyOffset(i, hasValueLength);
}
