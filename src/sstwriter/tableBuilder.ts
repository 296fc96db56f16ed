/**
 * Table builder: turns a stream of internal-key entries and range tombstones into a RocksDB 7.8
 * BlockBasedTable, appended to a `TableSink`.
 *
 * File layout written (each block followed by its 5-byte trailer: u8 compression type ‖ u32le
 * checksum over the stored bytes plus the type byte):
 *   data block 0 … data block N-1     (compressed (LZ4, ZSTD or Snappy) when it saves more than 1/8)
 *   full filter                        (if a filter is configured and a point key was added)
 *   index block                        (compressed under the same rule as data blocks)
 *   range_del block                    (if any tombstone was added; never compressed)
 *   properties block                   (never compressed)
 *   metaindex block                    (never compressed)
 *   footer (53 bytes)
 * With compression off, the output is byte-identical to RocksDB's SstFileWriter given the same
 * entries, options and session id. Compressed, it is a valid RocksDB file, but our encoders
 * (lz4-napi's lz4_flex, napi-rs snappy's Rust port, zstd-napi's libzstd, whose version may differ from
 * RocksDB's) may choose different matches, so bytes (and the 1/8 decision) can differ.
 *
 * Data blocks are cut with RocksDB's FlushBlockBySizePolicy: before adding (k, v) to a non-empty
 * block, the block is finished if its size is already >= block size, or if adding would exceed
 * the block size while the block is already past the deviation limit
 * (ceil(block size × (100 − deviation) / 100)).
 *
 * With `backgroundCompression`, finished data blocks go to a worker thread
 * (blockCompressionPipeline.ts) that compresses and checksums them while this thread builds the
 * next blocks; they come back in order and are written and indexed then. The file is
 * byte-identical to the inline path's: the same functions run on the same bytes, only on
 * another thread.
 *
 * Contract:
 * - `add` takes internal keys in strictly increasing internal-key order (violations throw
 *   IngestError KEY_ORDER); keys and values are copied, so callers may reuse their buffers.
 * - `addRangeTombstone` may be interleaved with `add` in any order; tombstones are stored in the
 *   order added, and must have start < end.
 * - `finish` writes the meta blocks and footer and returns the table's metadata; a table with no
 *   entries and no tombstones is refused (INVALID_ARGUMENT) before anything is written. After
 *   `finish` or any thrown error the builder must not be used again.
 */
import { randomInt } from 'crypto';
import { BlockHandle } from '../util/coding';
import { IngestError, assert } from '../util/errors';
import { BlockBuilder, MAX_BLOCK_BYTES } from './blockBuilder';
import { compareByteRanges } from '../util/byteRanges';
import { BlockCompressionPipeline, StoredBatch } from './blockCompressionPipeline';
import { BLOCK_TRAILER_BYTES, ChecksumType } from '../sstable/checksum';
import { CompressionType, compressionName, isWritableCompression } from '../sstable/compression';
import { BLOOM_FILTER_POLICY_NAME } from '../sstable/bloomFilter';
import { FilterBuilder, createFilterBuilder } from './filterBuilder';
import { encodeFooter } from '../sstable/footer';
import {
  DEFAULT_FORMAT_VERSION,
  MAX_SUPPORTED_FORMAT_VERSION,
  META_FULL_FILTER,
  META_PROPERTIES,
  META_RANGE_DEL,
  MIN_SUPPORTED_FORMAT_VERSION,
} from '../sstable/format';
import { IndexBuilder, PreparedIndexKey, prepareIndexKey } from './indexBuilder';
import {
  MAX_SEQUENCE_NUMBER,
  TRAILER_BYTES,
  ValueType,
  compareInternalKeys,
  formatKey,
  makeInternalKey,
  sequenceOf,
} from '../base/internalKey';
import { MetaindexBuilder } from './metaindex';
import {
  DEFAULT_COMPRESSION_OPTIONS,
  TableProperties,
  UNKNOWN_COLUMN_FAMILY_ID,
  emptyTableProperties,
  encodePropertyMap,
} from '../sstable/properties';
import { buildPropertiesBlock } from './propertiesBlock';
import { RangeDelBlockBuilder } from './rangeDelBlock';
import { storeBlock, writeBlockTrailer } from './storedBlock';
import type { TableSink } from './fileSink';

export type { TableSink } from './fileSink';

export const BYTEWISE_COMPARATOR_NAME = 'leveldb.BytewiseComparator';
/** SstFileWriter's rocksdb.external_sst_file.version. */
export const EXTERNAL_SST_FILE_VERSION = 2;
/** Length of a RocksDB session id: 20 characters from [0-9A-Z]. */
export const DB_SESSION_ID_CHARS = 20;
const SESSION_ID_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** kTypeDeletionWithTimestamp: counts as a deletion in rocksdb.deleted.keys. */
const VALUE_TYPE_DELETION_WITH_TIMESTAMP = 0x14;
/** Largest block writeBlock compresses into its reusable scratch buffer (data blocks are about 4 KiB). */
const COMPRESS_SCRATCH_MAX_BYTES = 1 << 20;

export interface TableBuilderOptions {
  /** Footer format_version, 2..5 (RocksDB 7.8 default 5). */
  formatVersion: number;
  checksumType: ChecksumType;
  /** None, LZ4, ZSTD or Snappy. */
  compression: CompressionType;
  /** Target uncompressed data block size. */
  blockSizeBytes: number;
  /** A block may be cut this many percent short of the target to avoid overshooting it. */
  blockSizeDeviationPercent: number;
  /** Data-block entries per restart point. */
  blockRestartInterval: number;
  /** Index-block entries per restart point. */
  indexBlockRestartInterval: number;
  /** Bloom filter bits per key; 0 = no filter. */
  bloomBitsPerKey: number;
  /** rocksdb.creating.db.identity. */
  dbId: string;
  /** rocksdb.creating.session.identity; '' = generate a random one. */
  dbSessionId: string;
  /** rocksdb.creating.host.identity; '' = not written. */
  dbHostId: string;
  columnFamilyId: number;
  /** '' = not written. */
  columnFamilyName: string;
  mergeOperatorName: string;
  /** rocksdb.creation.time, seconds since the epoch (oldest ancestor time). */
  creationTime: number;
  /** rocksdb.oldest.key.time, seconds since the epoch. */
  oldestKeyTime: number;
  /** rocksdb.file.creation.time, seconds since the epoch; 0 = not written. */
  fileCreationTime: number;
  originalFileNumber: number;
  /** Write rocksdb.external_sst_file.version = 2 and global_seqno = 0 (SstFileWriter files). */
  externalFile: boolean;
  /**
   * Compress and checksum data blocks on a worker thread (blockCompressionPipeline.ts) while
   * the next blocks are built. The file is byte-identical either way; only speed and
   * `fileSizeEstimate()` (which then counts blocks in flight at their uncompressed size) differ.
   */
  backgroundCompression: boolean;
}

export const DEFAULT_TABLE_BUILDER_OPTIONS: Readonly<TableBuilderOptions> = Object.freeze({
  formatVersion: DEFAULT_FORMAT_VERSION,
  checksumType: ChecksumType.XXH3,
  compression: CompressionType.LZ4,
  blockSizeBytes: 4096,
  blockSizeDeviationPercent: 10,
  blockRestartInterval: 16,
  indexBlockRestartInterval: 1,
  bloomBitsPerKey: 10,
  dbId: 'SST Writer',
  dbSessionId: '',
  dbHostId: '',
  columnFamilyId: UNKNOWN_COLUMN_FAMILY_ID,
  columnFamilyName: '',
  mergeOperatorName: 'nullptr',
  creationTime: 0,
  oldestKeyTime: 0,
  fileCreationTime: 0,
  originalFileNumber: 1,
  externalFile: false,
  backgroundCompression: false,
});

/** The smallest data block that may be cut early (RocksDB's block_size_deviation_limit: ceil(size × (100 − deviation) / 100)). */
export function blockDeviationLimitBytes(o: Pick<TableBuilderOptions, 'blockSizeBytes' | 'blockSizeDeviationPercent'>): number {
  return Math.floor((o.blockSizeBytes * (100 - o.blockSizeDeviationPercent) + 99) / 100);
}

/** A random RocksDB-style session id: 20 characters from [0-9A-Z]. */
export function generateDbSessionId(): string {
  let id = '';
  for (let i = 0; i < DB_SESSION_ID_CHARS; i++) id += SESSION_ID_ALPHABET[randomInt(SESSION_ID_ALPHABET.length)];
  return id;
}

function invalid(message: string): IngestError {
  return new IngestError('INVALID_ARGUMENT', message);
}

function checkInteger(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) throw invalid(`${name} must be an integer in [${min}, ${max}], got ${v}`);
}

/** Fills in defaults and validates; throws IngestError INVALID_ARGUMENT / NOT_SUPPORTED. */
export function resolveTableBuilderOptions(partial: Partial<TableBuilderOptions> = {}): TableBuilderOptions {
  const o: TableBuilderOptions = { ...DEFAULT_TABLE_BUILDER_OPTIONS };
  for (const [k, v] of Object.entries(partial) as Array<[keyof TableBuilderOptions, unknown]>) {
    if (v !== undefined) (o as unknown as Record<string, unknown>)[k] = v;
  }
  if (
    !Number.isInteger(o.formatVersion) ||
    o.formatVersion < MIN_SUPPORTED_FORMAT_VERSION ||
    o.formatVersion > MAX_SUPPORTED_FORMAT_VERSION
  ) {
    throw new IngestError(
      'NOT_SUPPORTED',
      `format_version ${o.formatVersion} is not supported (the writer supports ${MIN_SUPPORTED_FORMAT_VERSION} to ${MAX_SUPPORTED_FORMAT_VERSION})`,
    );
  }
  checkInteger('checksumType', o.checksumType, ChecksumType.None, ChecksumType.XXH3);
  if (!isWritableCompression(o.compression)) {
    throw new IngestError(
      'NOT_SUPPORTED',
      `compression ${compressionName(o.compression)} is not supported for writing (use NoCompression, LZ4, ZSTD or Snappy)`,
    );
  }
  checkInteger('blockSizeBytes', o.blockSizeBytes, 1, MAX_BLOCK_BYTES);
  checkInteger('blockSizeDeviationPercent', o.blockSizeDeviationPercent, 0, 100);
  checkInteger('blockRestartInterval', o.blockRestartInterval, 1, 0x7fffffff);
  checkInteger('indexBlockRestartInterval', o.indexBlockRestartInterval, 1, 0x7fffffff);
  if (!Number.isFinite(o.bloomBitsPerKey) || o.bloomBitsPerKey < 0 || o.bloomBitsPerKey > 100) {
    throw invalid(`bloomBitsPerKey must be 0 (no filter) or at most 100, got ${o.bloomBitsPerKey}`);
  }
  checkInteger('columnFamilyId', o.columnFamilyId, 0, 0xffffffff);
  for (const name of ['creationTime', 'oldestKeyTime', 'fileCreationTime', 'originalFileNumber'] as const) {
    checkInteger(name, o[name], 0, Number.MAX_SAFE_INTEGER);
  }
  if (o.dbSessionId === '') o.dbSessionId = generateDbSessionId();
  return o;
}

/** What a finished table contains; keys are internal keys (copies). */
export interface TableBuildResult {
  fileSizeBytes: number;
  /** Smallest internal key, counting each tombstone start as (start, seq, RangeDeletion). */
  smallestKey: Buffer;
  /** Largest internal key, counting each tombstone end as (end, MAX_SEQUENCE_NUMBER, RangeDeletion). */
  largestKey: Buffer;
  smallestSeq: number;
  largestSeq: number;
  /** Point entries plus range tombstones. */
  numEntries: number;
  numPointEntries: number;
  /** As rocksdb.deleted.keys: point deletions plus range tombstones. */
  numDeletions: number;
  numRangeDeletions: number;
  numDataBlocks: number;
  /** File offset of the 8-byte global-seqno property value, or -1 if not written. */
  globalSeqnoFileOffset: number;
  properties: TableProperties;
}

/**
 * A data block its caller encoded itself (the import's native merge, src/ingest/sort/nativeMerge.ts),
 * for `TableBuilder.addEncodedDataBlock`: its finished contents (entries, restart offsets and
 * their count, as BlockBuilder.finish lays them out), the internal keys at its two ends, the
 * internal key that starts the next block (null when it is the table's last), its counts, and,
 * when the table has a filter, the XXPH3 hashes of its user keys in entry order. Every entry is
 * a Put at sequence 0. The views are read during the call only.
 */
export interface EncodedDataBlock {
  contents: Buffer;
  firstKey: Uint8Array;
  lastKey: Uint8Array;
  nextKey: Uint8Array | null;
  entries: number;
  rawKeyBytes: number;
  rawValueBytes: number;
  hashLo: Uint32Array;
  hashHi: Uint32Array;
}

export class TableBuilder {
  private readonly options: TableBuilderOptions;
  private readonly dataBlock: BlockBuilder;
  private readonly index: IndexBuilder;
  private readonly filter: FilterBuilder | null;
  private readonly rangeDel = new RangeDelBlockBuilder();
  private readonly props: TableProperties = emptyTableProperties();
  /** Smallest block size that may be cut early (RocksDB's block_size_deviation_limit). */
  private readonly deviationLimitBytes: number;
  private readonly trailer = Buffer.alloc(BLOCK_TRAILER_BYTES);
  /** Where writeBlock compresses a block (see storeBlock's scratch); grows to the largest block up to its bound. */
  private compressScratch: Buffer = Buffer.alloc(0);
  /** Stores data blocks on a worker thread; null when blocks are stored inline. */
  private pipeline: BlockCompressionPipeline<PreparedIndexKey> | null = null;

  /** File offset of the next block. */
  private offset = 0;
  private firstKey: Buffer | null = null;
  private numPointEntries = 0;
  private smallestTombstoneKey: Buffer | null = null;
  private largestTombstoneKey: Buffer | null = null;
  private smallestSeq = Number.MAX_SAFE_INTEGER;
  private largestSeq = 0;
  private closed = false;
  /** The last key of the last encoded block (addEncodedDataBlock); null while add() feeds the table. */
  private lastEncodedKey: Buffer | null = null;

  constructor(
    private readonly sink: TableSink,
    options: Partial<TableBuilderOptions> = {},
  ) {
    this.options = resolveTableBuilderOptions(options);
    const o = this.options;
    this.dataBlock = new BlockBuilder({
      restartInterval: o.blockRestartInterval,
      initialCapacityBytes: Math.min(o.blockSizeBytes * 2, 1 << 20),
    });
    this.index = new IndexBuilder({ formatVersion: o.formatVersion, restartInterval: o.indexBlockRestartInterval });
    this.filter = o.bloomBitsPerKey > 0 ? createFilterBuilder(o.formatVersion, o.bloomBitsPerKey) : null;
    this.deviationLimitBytes = blockDeviationLimitBytes(o);
    if (o.backgroundCompression) this.pipeline = new BlockCompressionPipeline(o, (batch) => this.writeStoredBatch(batch));
  }

  /**
   * Adds a point entry. `internalKey` = user key ‖ u64le(seq << 8 | type). A caller that already
   * holds the user key as its own array may pass it as `userKey` (it must equal the internal key
   * minus its trailer) to spare a view per key on the filter path.
   */
  add(internalKey: Uint8Array, value: Uint8Array, userKey?: Uint8Array): void {
    if (this.closed) assert(false, 'TableBuilder used after finish() or abandon()');
    if (this.lastEncodedKey !== null) assert(false, 'add() after addEncodedDataBlock(): a table takes one or the other');
    const keyBytes = internalKey.length;
    if (keyBytes < TRAILER_BYTES)
      throw new IngestError('INVALID_ARGUMENT', `internal key of ${keyBytes} bytes is shorter than its 8-byte trailer`);
    // The open data block is never empty once a point key was added (a cut is immediately
    // followed by the add that caused it), so its last key is the previous point key.
    const block = this.dataBlock;
    const last = block.lastKey();
    const lastBytes = last.length;
    // One pass gives the order check and the prefix the block shares with the previous key.
    const limit = lastBytes < keyBytes ? lastBytes : keyBytes;
    let prefix = 0;
    while (prefix < limit && last[prefix] === internalKey[prefix]) prefix++;
    if (this.numPointEntries > 0) {
      // A first difference inside both user keys decides the order bytewise; otherwise one user
      // key is a prefix of the other (or they are equal) and the full comparator decides.
      const decidedByUserKeys = prefix < lastBytes - TRAILER_BYTES && prefix < keyBytes - TRAILER_BYTES;
      if (decidedByUserKeys ? last[prefix] > internalKey[prefix] : compareInternalKeyRanges(last, internalKey) >= 0) {
        throw new IngestError(
          'KEY_ORDER',
          `internal key ${describeInternalKey(internalKey)} is not greater than the previous key ${describeInternalKey(last)}`,
        );
      }
    }
    const type = internalKey[keyBytes - TRAILER_BYTES];
    if (type === ValueType.RangeDeletion) assert(false, 'range tombstones go through addRangeTombstone()');

    if (!block.empty() && this.blockIsFull(keyBytes, value.length)) {
      this.flushDataBlock(internalKey);
      prefix = 0;
    }
    if (this.filter !== null) this.filter.addKey(userKey ?? internalKey.subarray(0, keyBytes - TRAILER_BYTES));
    block.addWithKnownPrefix(internalKey, value, prefix);

    if (this.firstKey === null) this.firstKey = Buffer.from(internalKey);

    const seq = sequenceOf(internalKey);
    if (seq < this.smallestSeq) this.smallestSeq = seq;
    if (seq > this.largestSeq) this.largestSeq = seq;

    const p = this.props;
    this.numPointEntries++;
    p.numEntries++;
    p.rawKeySize += keyBytes;
    p.rawValueSize += value.length;
    if (type === ValueType.Deletion || type === ValueType.SingleDeletion || type === VALUE_TYPE_DELETION_WITH_TIMESTAMP) {
      p.numDeletions++;
    } else if (type === ValueType.Merge) {
      p.numMergeOperands++;
    }
  }

  /**
   * Writes a data block the caller encoded (see EncodedDataBlock), as flushDataBlock would have
   * written the same entries added one by one: indexed by the separator of its last key and
   * `nextKey`, its hashes added to the filter, its counts to the properties. Blocks must come in
   * key order (KEY_ORDER otherwise) and a table takes either these or add(), not both; the
   * table must store its blocks inline (no backgroundCompression).
   */
  addEncodedDataBlock(b: EncodedDataBlock): void {
    if (this.closed) assert(false, 'TableBuilder used after finish() or abandon()');
    if (!this.dataBlock.empty() || this.pipeline !== null) assert(false, 'addEncodedDataBlock() needs an inline table fed no add()');
    if (!(b.entries > 0 && b.firstKey.length >= TRAILER_BYTES && b.lastKey.length >= TRAILER_BYTES))
      assert(false, 'an encoded block has entries and internal keys');
    if (sequenceOf(b.firstKey) !== 0 || sequenceOf(b.lastKey) !== 0) assert(false, 'encoded blocks hold sequence-0 entries');
    const previous = this.lastEncodedKey;
    if (previous !== null && compareInternalKeyRanges(previous, b.firstKey) >= 0) {
      throw new IngestError(
        'KEY_ORDER',
        `internal key ${describeInternalKey(b.firstKey)} is not greater than the previous key ${describeInternalKey(previous)}`,
      );
    }
    if (this.filter !== null) this.filter.addHashes(b.hashLo, b.hashHi, b.entries);
    this.index.addPreparedEntry(prepareIndexKey(b.lastKey, b.nextKey), this.writeBlock(b.contents, true));
    if (this.firstKey === null) this.firstKey = Buffer.from(b.firstKey);
    this.lastEncodedKey = previous !== null && previous.length === b.lastKey.length ? previous : Buffer.allocUnsafe(b.lastKey.length);
    this.lastEncodedKey.set(b.lastKey);
    if (this.smallestSeq > 0) this.smallestSeq = 0;
    const p = this.props;
    this.numPointEntries += b.entries;
    p.numEntries += b.entries;
    p.rawKeySize += b.rawKeyBytes;
    p.rawValueSize += b.rawValueBytes;
    p.numDataBlocks++;
  }

  /** Adds range tombstone [startUserKey, endUserKey) at sequence `seq` (start < end). */
  addRangeTombstone(startUserKey: Uint8Array, endUserKey: Uint8Array, seq: number): void {
    assert(!this.closed, 'TableBuilder used after finish() or abandon()');
    assert(Buffer.compare(startUserKey, endUserKey) < 0, 'range tombstone start must be below its end');
    const keyBytes = this.rangeDel.add(startUserKey, endUserKey, seq);
    const start = makeInternalKey(startUserKey, seq, ValueType.RangeDeletion);
    if (this.smallestTombstoneKey === null || compareInternalKeys(start, this.smallestTombstoneKey) < 0) this.smallestTombstoneKey = start;
    const end = makeInternalKey(endUserKey, MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion);
    if (this.largestTombstoneKey === null || compareInternalKeys(end, this.largestTombstoneKey) > 0) this.largestTombstoneKey = end;
    if (seq < this.smallestSeq) this.smallestSeq = seq;
    if (seq > this.largestSeq) this.largestSeq = seq;

    const p = this.props;
    p.numEntries++;
    p.numRangeDeletions++;
    p.numDeletions++;
    p.rawKeySize += keyBytes;
    p.rawValueSize += endUserKey.length;
  }

  /** Point entries plus tombstones added so far. */
  numEntries(): number {
    return this.props.numEntries;
  }

  /** Bytes written so far plus the open data block: what the file would hold without meta blocks. */
  fileSizeEstimate(): number {
    const inFlight = this.pipeline === null ? 0 : this.pipeline.pendingStoredBytes();
    return this.offset + inFlight + (this.dataBlock.empty() ? 0 : this.dataBlock.currentSizeEstimate() + BLOCK_TRAILER_BYTES);
  }

  /** Writes the remaining blocks and the footer. */
  finish(): TableBuildResult {
    assert(!this.closed, 'TableBuilder used after finish() or abandon()');
    if (this.props.numEntries === 0) {
      throw new IngestError('INVALID_ARGUMENT', 'cannot create an SST file with no entries (no keys and no range tombstones were added)');
    }
    this.closed = true;
    const o = this.options;
    const p = this.props;
    const meta = new MetaindexBuilder();

    const lastPointKey = this.dataBlock.empty() ? this.lastEncodedKey : Buffer.from(this.dataBlock.lastKey());
    if (!this.dataBlock.empty()) this.flushDataBlock(null);
    if (this.pipeline !== null) {
      this.pipeline.flush();
      this.pipeline.close();
      this.pipeline = null;
    }
    p.dataSize = this.offset;

    if (this.filter !== null) {
      p.numFilterEntries = this.filter.numEntries();
      const filterContents = this.numPointEntries > 0 ? this.filter.finish() : null;
      // The hashes are in the filter block now; their storage goes to the next table of this thread.
      this.filter.reset();
      if (filterContents !== null) {
        meta.add(META_FULL_FILTER, this.writeBlock(filterContents, false));
        p.filterSize = filterContents.length;
      }
    }

    const index = this.index.finish();
    const indexHandle = this.writeBlock(index.contents, true);
    p.indexSize = index.contents.length + BLOCK_TRAILER_BYTES;
    p.indexKeyIsUserKey = index.keyIsUserKey;
    p.indexValueIsDeltaEncoded = index.valueIsDeltaEncoded;

    if (!this.rangeDel.empty()) meta.add(META_RANGE_DEL, this.writeBlock(this.rangeDel.finish(), false));

    this.fillIdentityProperties();
    p.raw = encodePropertyMap(p);
    const propsBlock = buildPropertiesBlock(p.raw);
    const propsHandle = this.writeBlock(propsBlock.contents, false);
    meta.add(META_PROPERTIES, propsHandle);

    const metaindexHandle = this.writeBlock(meta.finish(), false);
    const footer = encodeFooter({ checksumType: o.checksumType, metaindexHandle, indexHandle, formatVersion: o.formatVersion });
    this.sink.append(footer);
    this.offset += footer.length;

    let smallestKey = this.firstKey;
    if (this.smallestTombstoneKey !== null && (smallestKey === null || compareInternalKeys(this.smallestTombstoneKey, smallestKey) < 0)) {
      smallestKey = this.smallestTombstoneKey;
    }
    let largestKey: Buffer | null = lastPointKey;
    if (this.largestTombstoneKey !== null && (largestKey === null || compareInternalKeys(this.largestTombstoneKey, largestKey) > 0)) {
      largestKey = this.largestTombstoneKey;
    }
    assert(smallestKey !== null && largestKey !== null, 'a non-empty table has bounds');

    return {
      fileSizeBytes: this.offset,
      smallestKey,
      largestKey,
      smallestSeq: this.smallestSeq,
      largestSeq: this.largestSeq,
      numEntries: p.numEntries,
      numPointEntries: this.numPointEntries,
      numDeletions: p.numDeletions,
      numRangeDeletions: p.numRangeDeletions,
      numDataBlocks: p.numDataBlocks,
      globalSeqnoFileOffset: propsBlock.globalSeqnoValueOffset < 0 ? -1 : propsHandle.offset + propsBlock.globalSeqnoValueOffset,
      properties: p,
    };
  }

  /** Marks the builder unusable without writing anything more (the caller discards the output). */
  abandon(): void {
    this.closed = true;
    if (this.pipeline !== null) this.pipeline.close();
    this.filter?.reset();
  }

  private blockIsFull(keyBytes: number, valueBytes: number): boolean {
    const block = this.dataBlock;
    const blockSize = this.options.blockSizeBytes;
    const current = block.currentSizeEstimate();
    if (current >= blockSize) return true;
    // The estimate is only needed once the block is past the deviation limit (most adds are not).
    return (
      current > this.deviationLimitBytes &&
      this.deviationLimitBytes > 0 &&
      block.estimatedSizeAfterLengths(keyBytes, valueBytes) > blockSize
    );
  }

  /**
   * Writes the open data block and indexes it by a separator between its last key and
   * `nextKey` (the key about to start the next block), or by its last key if it is the last block.
   */
  private flushDataBlock(nextKey: Uint8Array | null): void {
    const block = this.dataBlock;
    const contents = block.finish();
    const indexKey = prepareIndexKey(block.lastKey(), nextKey);
    if (this.pipeline !== null) {
      // The handle is known once the worker has stored the block; writeStoredBatch adds it.
      this.pipeline.submit(contents, indexKey);
    } else {
      this.index.addPreparedEntry(indexKey, this.writeBlock(contents, true));
    }
    block.reset();
    this.props.numDataBlocks++;
  }

  /** Appends data blocks stored by the pipeline (in file order) and indexes them. */
  private writeStoredBatch(batch: StoredBatch<PreparedIndexKey>): void {
    let offset = this.offset;
    for (let i = 0; i < batch.tags.length; i++) {
      const size = batch.storedSizes[i];
      this.index.addPreparedEntry(batch.tags[i], { offset, size });
      offset += size + BLOCK_TRAILER_BYTES;
    }
    if (offset - this.offset !== batch.bytes.length)
      assert(false, `stored batch of ${batch.bytes.length} bytes does not match its block sizes`);
    this.sink.append(batch.bytes);
    this.offset = offset;
  }

  /** Appends `contents` (maybe compressed) and its trailer; returns the block's handle. */
  private writeBlock(contents: Buffer, compressible: boolean): BlockHandle {
    // The sink copies the stored bytes at once, so the compressor may reuse one scratch buffer
    // (up to COMPRESS_SCRATCH_MAX_BYTES; a larger block, a big index, gets a Buffer of its own).
    const fits = contents.length <= COMPRESS_SCRATCH_MAX_BYTES;
    if (compressible && fits && this.compressScratch.length < contents.length) this.compressScratch = Buffer.allocUnsafe(contents.length);
    const stored = storeBlock(contents, compressible, this.options, fits ? this.compressScratch : undefined);
    const handle = { offset: this.offset, size: stored.bytes.length };
    this.sink.append(stored.bytes);
    writeBlockTrailer(this.trailer, 0, stored.type, stored.checksum);
    this.sink.append(this.trailer);
    this.offset += stored.bytes.length + BLOCK_TRAILER_BYTES;
    return handle;
  }

  private fillIdentityProperties(): void {
    const o = this.options;
    const p = this.props;
    p.comparatorName = BYTEWISE_COMPARATOR_NAME;
    p.mergeOperatorName = o.mergeOperatorName;
    p.prefixExtractorName = 'nullptr';
    p.propertyCollectorsNames = '[]';
    p.compressionName = compressionName(o.compression);
    p.compressionOptions = DEFAULT_COMPRESSION_OPTIONS;
    p.filterPolicyName = this.filter !== null ? BLOOM_FILTER_POLICY_NAME : '';
    p.columnFamilyId = o.columnFamilyId;
    p.columnFamilyName = o.columnFamilyName;
    p.creationTime = o.creationTime;
    p.oldestKeyTime = o.oldestKeyTime;
    p.fileCreationTime = o.fileCreationTime;
    p.dbId = o.dbId;
    p.dbSessionId = o.dbSessionId;
    p.dbHostId = o.dbHostId;
    p.originalFileNumber = o.originalFileNumber;
    p.formatVersion = 0;
    p.indexType = 0;
    p.wholeKeyFiltering = true;
    p.prefixFiltering = false;
    if (o.externalFile) {
      p.externalSstFileVersion = EXTERNAL_SST_FILE_VERSION;
      p.globalSeqno = 0;
    }
  }
}

/** compareInternalKeys(a, b) without creating views: user keys bytewise, then trailers descending. */
function compareInternalKeyRanges(a: Uint8Array, b: Uint8Array): number {
  const aUser = a.length - TRAILER_BYTES;
  const bUser = b.length - TRAILER_BYTES;
  const c = compareByteRanges(a, aUser, b, bUser);
  if (c !== 0) return c;
  // Same user key: the larger (sequence, type) trailer sorts first. Compare the u64le trailers
  // from their most significant byte.
  for (let i = TRAILER_BYTES - 1; i >= 0; i--) {
    const x = a[aUser + i];
    const y = b[bUser + i];
    if (x !== y) return x > y ? -1 : 1;
  }
  return 0;
}

function describeInternalKey(ikey: Uint8Array): string {
  const user = ikey.subarray(0, ikey.length - TRAILER_BYTES);
  return `${formatKey(user)} (seq ${sequenceOf(ikey)}, type ${ikey[ikey.length - TRAILER_BYTES]})`;
}
