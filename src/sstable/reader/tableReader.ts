/**
 * The table reader: opens one RocksDB BlockBasedTable file (format_version 2..5) and serves
 * iterators, point lookups, range tombstones and a full verification.
 *
 * File layout (see the format notes in sstwriter/): data blocks ‖ filter ‖ index ‖ range_del ‖
 * properties ‖ metaindex ‖ footer. Each block is followed by a 5-byte trailer
 * (u8 compression type ‖ u32le checksum over contents + type byte).
 *
 * Opening reads, in order: the footer; the metaindex (names → handles); the properties (whose
 * checksum may only match with the 8 global-seqno value bytes zeroed, because ingestion rewrites
 * them in place); the full filter; the index block; the range_del block. All of them stay in
 * memory for the reader's lifetime (RocksDB's default with cache_index_and_filter_blocks off);
 * data blocks go through the block cache when one is given.
 *
 * Contract:
 * - Every block read verifies its checksum unless `verifyChecksums` is false; a mismatch, a
 *   malformed block or an undecodable payload is a CorruptionError naming the file and block
 *   offset. Blocks are decompressed by their trailer type: NoCompression, LZ4 and LZ4HC only.
 * - Partitioned (two-level) indexes and partitioned filters are read through
 *   src/sstable/reader/partitionedIndex.ts; index partitions go through the block cache like data blocks.
 * - Not supported (IngestError NOT_SUPPORTED, naming the file): format_version outside 2..5,
 *   the binary-search-with-first-key index type, compression other than None/LZ4/LZ4HC,
 *   comparators other than leveldb.BytewiseComparator, external-file versions above 2.
 * - Index keys are user keys or internal keys per rocksdb.index.key.is.user.key, values plain or
 *   delta-encoded handles per rocksdb.index.value.is.delta.encoded (never inferred from the
 *   footer version, exactly as RocksDB reads them).
 * - Global sequence number: for external files of version 2, the property if non-zero, else the
 *   `globalSeqno` open option (the MANIFEST's value), else 0; it replaces the sequence number of
 *   every key read from data blocks and the range_del block (types kept). A non-zero property
 *   that disagrees with the option is a CorruptionError, as in RocksDB.
 * - I/O is synchronous (openSync/readSync); the reader holds one file descriptor until close().
 */
import * as fs from 'fs';
import { perf } from '../../base/perfContext';
import { compareByteRanges, compareInternalKeyRanges } from '../../base/keyCompare';
import { BlockHandle, readBlockHandle, readVarint32, decoded } from '../../util/coding';
import { CorruptionError, IngestError } from '../../util/errors';
import { BLOCK_TRAILER_BYTES, computeBlockChecksum } from '../checksum';
import { CompressionType, compressionName, LZ4_NAPI_SIZE_BYTES, lz4DecompressBlockInPlace } from '../compression';
import { decodeFooter, Footer } from '../footer';
import {
  FOOTER_BYTES,
  META_PROPERTIES,
  META_RANGE_DEL,
  MAX_SUPPORTED_FORMAT_VERSION,
  MIN_SUPPORTED_FORMAT_VERSION,
  Prop,
} from '../format';
import { SeekKeyBuilder, makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, TRAILER_BYTES, typeOf, ValueType } from '../../base/internalKey';
import { decodePropertyMap, TableProperties } from '../properties';
import { Block, BlockIterator, BlockValueFormat, KeyOrder } from './block';
import { BlockCache, BlockCacheHandle } from './blockCache';
import { FilterReader } from './filterReader';
import { PartitionedFilter, PartitionedIndexIterator } from './partitionedIndex';
import { IndexIterator, TableBlockSource, TableIterator, TableIteratorOptions } from './tableIterator';
import { FragmentedTombstoneList, fragmentTombstones } from '../../base/fragmenter';
import { BlockArena } from './blockArena';
import { isNativeCodecError, NATIVE_CHECKSUM_TYPES, nativeBlockCodec, NativeBlockCodec } from '../nativeBlockCodec';

export interface TableReaderOptions {
  /** Verify every block checksum as it is read (default true). */
  verifyChecksums?: boolean;
  /** Shared cache for data blocks; without one every data block is read from the file. */
  blockCache?: BlockCache;
  /** The file's sequence number from the MANIFEST (used when the property is 0). */
  globalSeqno?: number;
  /** The file number in its database, for diagnostics. */
  fileNumber?: number;
  /**
   * Read blocks through the native codec when it is built and handles the file's checksum type
   * (default true); false keeps this reader on the JavaScript path (tests compare the two).
   */
  useNativeCodec?: boolean;
}

export interface TableEntry {
  type: number;
  seq: number;
  value: Buffer;
}

export interface RangeTombstone {
  start: Buffer;
  end: Buffer;
  seq: number;
}

/**
 * Largest block we accept, in bytes (stored or decompressed). Blocks are typically KiBs; this
 * only stops a corrupt handle or size header from asking for an absurd allocation.
 */
export const MAX_BLOCK_BYTES = 1 << 30;
/**
 * Largest read, in bytes, that goes through a reader's reusable scratch buffer (so each open
 * reader may hold this much); larger blocks (big filters, huge index blocks) get their own.
 */
const READ_SCRATCH_MAX_BYTES = 256 * 1024;
/** LZ4 cannot expand its input by more than this factor; a larger size header is corrupt. */
const LZ4_MAX_EXPANSION = 255;
const BYTEWISE_COMPARATOR = 'leveldb.BytewiseComparator';
const FULL_FILTER_PREFIX = 'fullfilter.';
const PARTITIONED_FILTER_PREFIX = 'partitionedfilter.';
const SUPPORTED_COMPRESSION_NAMES: ReadonlySet<string> = new Set(['', 'NoCompression', 'LZ4', 'LZ4HC']);
/** Index types (rocksdb.block.based.table.index.type). */
const INDEX_BINARY_SEARCH = 0;
const INDEX_HASH_SEARCH = 1;
const INDEX_TWO_LEVEL = 2;

type BlockKind = 'data' | 'index' | 'filter' | 'metaindex' | 'properties' | 'range_del';

/** A data block read without a cache: "releasing" it just drops the reference. */
class UncachedBlock implements BlockCacheHandle {
  constructor(readonly block: Block) {}
  release(): void {}
}

/** Where this thread's data blocks are decoded when the native codec reads them (src/sstable/reader/blockArena.ts). */
const dataBlockArena = new BlockArena();

export class TableReader implements TableBlockSource {
  readonly path: string;
  readonly fileSizeBytes: number;
  readonly footer: Footer;
  readonly properties: TableProperties;
  readonly fileNumber: number | undefined;
  /** Sequence number given to every key (external version-2 files), or -1 to keep stored ones. */
  readonly globalSeqno: number;
  readonly indexKeyIsUserKey: boolean;
  private readonly indexValueFormat: BlockValueFormat;
  /** The index block, or the top-level index of a partitioned index. */
  private readonly indexBlock: Block;
  private readonly partitionedIndex: boolean;
  private readonly filter: FilterReader | PartitionedFilter | null;
  private readonly tombstones: RangeTombstone[];
  /** `tombstones` fragmented for search; built on first use (most tables have none). */
  private fragments: FragmentedTombstoneList | null = null;
  private readonly metaHandles: Map<string, BlockHandle>;
  private readonly verifyChecksums: boolean;
  private readonly blockCache: BlockCache | null;
  private readonly cacheId: number;
  private fd: number;
  /** The native block codec when it is built and handles this file's checksum type, else null. */
  private readonly nativeCodec: NativeBlockCodec | null;
  /** Where readRawBlock() reads blocks of up to READ_SCRATCH_MAX_BYTES; grows on demand. */
  private readScratch: Buffer = Buffer.alloc(0);
  /** get()'s seek target (see pointSeekKey). */
  private readonly seekKeys = new SeekKeyBuilder();
  /** Reused by get(): iterators carry key buffers worth keeping. */
  private pointIterator: TableIterator | null = null;

  private constructor(path: string, fd: number, fileSizeBytes: number, opts: TableReaderOptions) {
    this.path = path;
    this.fd = fd;
    this.fileSizeBytes = fileSizeBytes;
    this.fileNumber = opts.fileNumber;
    this.verifyChecksums = opts.verifyChecksums ?? true;
    this.blockCache = opts.blockCache ?? null;
    this.cacheId = this.blockCache === null ? 0 : this.blockCache.newCacheId();

    const tail = this.readAt(Math.max(0, fileSizeBytes - FOOTER_BYTES), Math.min(FOOTER_BYTES, fileSizeBytes));
    this.footer = decodeFooter(tail, fileSizeBytes, path);
    const nativeUsable = (opts.useNativeCodec ?? true) && NATIVE_CHECKSUM_TYPES.has(this.footer.checksumType);
    this.nativeCodec = nativeUsable ? nativeBlockCodec : null;
    const fv = this.footer.formatVersion;
    if (fv < MIN_SUPPORTED_FORMAT_VERSION || fv > MAX_SUPPORTED_FORMAT_VERSION) {
      throw new IngestError('NOT_SUPPORTED', `${path}: format_version ${fv} is not supported (this reader handles ${MIN_SUPPORTED_FORMAT_VERSION}..${MAX_SUPPORTED_FORMAT_VERSION})`);
    }

    this.metaHandles = this.readMetaindex();
    this.properties = this.readProperties();
    const props = this.properties;
    this.checkSupported(props);
    this.globalSeqno = this.resolveGlobalSeqno(props, opts.globalSeqno);

    this.indexKeyIsUserKey = props.indexKeyIsUserKey;
    this.indexValueFormat = props.indexValueIsDeltaEncoded ? BlockValueFormat.DeltaHandle : BlockValueFormat.Handle;
    this.partitionedIndex = props.indexType === INDEX_TWO_LEVEL;
    this.indexBlock = Block.parse(this.readBlock(this.footer.indexHandle, 'index', this.verifyChecksums), path, this.footer.indexHandle.offset);
    perf.indexBlocksRead++;
    this.filter = this.readFilter(props);
    this.tombstones = this.readRangeTombstones();
  }

  static open(path: string, opts: TableReaderOptions = {}): TableReader {
    let fd: number;
    try {
      fd = fs.openSync(path, 'r');
    } catch (e) {
      throw new IngestError('IO', `cannot open table ${path}: ${(e as Error).message}`, { cause: e });
    }
    try {
      const size = fs.fstatSync(fd).size;
      return new TableReader(path, fd, size, opts);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
  }

  newIterator(opts?: TableIteratorOptions): TableIterator {
    this.checkOpen();
    return new TableIterator(this, opts);
  }

  /**
   * Point lookup: the newest entry for `userKey` with sequence <= `readSeq` (any type:
   * deletions and merge operands included), or null. Asks the filter first. Range tombstones
   * are not applied (see rangeTombstones()).
   */
  get(userKey: Uint8Array, readSeq: number = MAX_SEQUENCE_NUMBER): TableEntry | null {
    if (!this.keyMayMatch(userKey)) return null;
    const wanted = asBuffer(userKey);
    if (this.pointIterator === null) this.pointIterator = this.newIterator();
    const it = this.pointIterator;
    try {
      it.seekGE(this.pointSeekKey(userKey, readSeq));
      if (!it.valid()) return null;
      const key = it.key();
      const userKeyLength = key.length - TRAILER_BYTES;
      if (compareByteRanges(key, 0, userKeyLength, wanted, 0, wanted.length) !== 0) return null;
      return { type: typeOf(key), seq: sequenceOf(key), value: Buffer.from(it.value()) };
    } finally {
      it.unpin();
    }
  }

  private pointSeekKey(userKey: Uint8Array, readSeq: number): Buffer {
    return this.seekKeys.build(userKey, readSeq);
  }

  /** False only if the filter proves `userKey` absent. Counts bloomChecks / bloomNegatives. */
  keyMayMatch(userKey: Uint8Array): boolean {
    if (this.filter === null) return true;
    perf.bloomChecks++;
    if (this.filter.keyMayMatch(asBuffer(userKey))) return true;
    perf.bloomNegatives++;
    return false;
  }

  /** Range tombstones as user keys in stored order, global seqno applied (copies). */
  rangeTombstones(): RangeTombstone[] {
    return this.tombstones.map((t) => ({ start: Buffer.from(t.start), end: Buffer.from(t.end), seq: t.seq }));
  }

  /**
   * The range tombstones fragmented for search (src/base/fragmenter.ts), built once per reader;
   * the shared empty list for a table without any. Not clipped to the file's bounds: that is
   * the caller's job, who knows them (see TableCache).
   */
  fragmentedRangeTombstones(): FragmentedTombstoneList {
    if (this.fragments === null) this.fragments = this.tombstones.length === 0 ? FragmentedTombstoneList.EMPTY : fragmentTombstones(this.rangeTombstones());
    return this.fragments;
  }

  /** The first point key (a copy), or null for a table without point entries. */
  smallestKey(): Buffer | null {
    const it = this.newIterator();
    try {
      it.first();
      return it.valid() ? Buffer.from(it.key()) : null;
    } finally {
      it.close();
    }
  }

  /** The last point key (a copy), or null for a table without point entries. */
  largestKey(): Buffer | null {
    const it = this.newIterator();
    try {
      it.last();
      return it.valid() ? Buffer.from(it.key()) : null;
    } finally {
      it.close();
    }
  }

  /**
   * Approximate file offset where entries for `userKey` start: the offset of the first data
   * block whose separator is >= the key, or the data size when the key is past the last block.
   */
  approximateOffsetOf(userKey: Buffer): number {
    const it = this.newIndexIterator();
    it.seekGE(this.indexKeyIsUserKey ? userKey : makeInternalKey(userKey, MAX_SEQUENCE_NUMBER, ValueType.Seek));
    const offset = it.valid() ? it.handleOffset : this.properties.dataSize || this.footer.metaindexHandle.offset;
    it.close();
    return offset;
  }

  close(): void {
    if (this.fd < 0) return;
    this.pointIterator?.close();
    this.pointIterator = null;
    fs.closeSync(this.fd);
    this.fd = -1;
    this.blockCache?.eraseFile(this.cacheId);
  }

  // --- TableBlockSource ----------------------------------------------------------------------

  newIndexIterator(): IndexIterator {
    return this.indexIterator(this.indexBlock, (offset, size) => this.loadIndexPartition(offset, size));
  }

  /** An iterator over an index block with this table's index encodings. */
  private indexBlockIterator(block: Block | null): BlockIterator {
    const order: KeyOrder = this.indexKeyIsUserKey ? compareByteRanges : compareInternalKeyRanges;
    return new BlockIterator(block, { order, valueFormat: this.indexValueFormat, internalKeys: !this.indexKeyIsUserKey, trySeekSteps: 0 });
  }

  private indexIterator(indexBlock: Block, loadPartition: (offset: number, size: number) => BlockCacheHandle): IndexIterator {
    if (!this.partitionedIndex) return this.indexBlockIterator(indexBlock);
    return new PartitionedIndexIterator(this.indexBlockIterator(indexBlock), this.indexBlockIterator(null), loadPartition);
  }

  private loadIndexPartition(offset: number, size: number): BlockCacheHandle {
    this.checkOpen();
    if (this.blockCache !== null) {
      const hit = this.blockCache.lookup(this.cacheId, offset);
      if (hit !== null) return hit;
    }
    const block = Block.parse(this.readBlock({ offset, size }, 'index', this.verifyChecksums), this.path, offset);
    perf.indexBlocksRead++;
    if (this.blockCache !== null) return this.blockCache.insert(this.cacheId, offset, block);
    return new UncachedBlock(block);
  }

  newDataBlockIterator(): BlockIterator {
    return new BlockIterator(null, { order: compareInternalKeyRanges, internalKeys: true, globalSeqno: this.globalSeqno });
  }

  loadDataBlock(offset: number, size: number, fillCache = true): BlockCacheHandle {
    this.checkOpen();
    if (this.blockCache !== null) {
      const hit = this.blockCache.lookup(this.cacheId, offset);
      if (hit !== null) return hit;
    }
    const arena = this.nativeCodec !== null ? dataBlockArena : null;
    const block = Block.parse(this.readBlock({ offset, size }, 'data', this.verifyChecksums, arena), this.path, offset, arena !== null);
    perf.dataBlocksRead++;
    if (this.blockCache !== null && fillCache) return this.blockCache.insert(this.cacheId, offset, block);
    return new UncachedBlock(block);
  }

  // --- verification --------------------------------------------------------------------------

  /**
   * Checks the whole file, ignoring the cache and the verifyChecksums option: every block
   * checksum, key order inside and across data blocks, restart entries, index separators and
   * handles, the filter against every key, and the properties against the contents. Throws a
   * CorruptionError describing the first problem found.
   */
  verify(): void {
    this.checkOpen();
    const fail = (offset: number, reason: string): never => {
      throw new CorruptionError(this.path, offset, reason);
    };
    // Meta blocks and the index: checksums and order.
    const metaindex = this.footer.metaindexHandle;
    const metaNames = this.iterateRaw(Block.parse(this.readBlock(metaindex, 'metaindex', true), this.path, metaindex.offset), (k) => k.toString('latin1'));
    for (let i = 1; i < metaNames.length; i++) {
      if (metaNames[i - 1] >= metaNames[i]) fail(metaindex.offset, `metaindex names out of order: "${metaNames[i - 1]}" before "${metaNames[i]}"`);
    }
    for (const [name, handle] of this.metaHandles) {
      if (name === META_PROPERTIES) {
        this.readPropertiesContents(handle, true);
      } else if (name.startsWith(PARTITIONED_FILTER_PREFIX)) {
        const partitions = this.indexBlockIterator(Block.parse(this.readBlock(handle, 'filter', true), this.path, handle.offset));
        for (partitions.first(); partitions.valid(); partitions.next()) this.readBlock({ offset: partitions.handleOffset, size: partitions.handleSize }, 'filter', true);
      } else {
        this.readBlock(handle, name === META_RANGE_DEL ? 'range_del' : 'filter', true);
      }
    }
    const indexHandle = this.footer.indexHandle;
    const indexContents = this.readBlock(indexHandle, 'index', true);
    const indexBlock = Block.parse(indexContents, this.path, indexHandle.offset);
    const hasValueLength = this.indexValueFormat !== BlockValueFormat.DeltaHandle;
    this.checkRestartEntries(indexBlock, hasValueLength);
    let indexBytes = indexContents.length;
    const loadVerified = (offset: number, size: number): BlockCacheHandle => new UncachedBlock(Block.parse(this.readBlock({ offset, size }, 'index', true), this.path, offset));
    if (this.partitionedIndex) {
      // Each partition is a valid index block whose last separator is its top-level key.
      let partitions = 0;
      const top = this.indexBlockIterator(indexBlock);
      const partition = this.indexBlockIterator(null);
      for (top.first(); top.valid(); top.next()) {
        const block = loadVerified(top.handleOffset, top.handleSize).block;
        this.checkRestartEntries(block, hasValueLength);
        partition.reset(block);
        partition.last();
        if (partition.valid() && !partition.key().equals(top.key())) fail(top.handleOffset, `index partition ${partitions}'s last separator differs from its top-level key`);
        indexBytes += block.data.length;
        partitions++;
      }
      if (this.properties.raw.has(Prop.IndexPartitions) && partitions !== this.properties.indexPartitions) {
        fail(indexHandle.offset, `property ${Prop.IndexPartitions} is ${this.properties.indexPartitions} but the top-level index lists ${partitions}`);
      }
    }

    // Data blocks, in index order. Keys are checked as stored (no global seqno).
    const index = this.indexIterator(indexBlock, loadVerified);
    const data = new BlockIterator(null, { order: compareInternalKeyRanges, internalKeys: true });
    // The previous key (across blocks), copied: views die when the iterator moves.
    let previousKey = Buffer.allocUnsafe(64);
    let previousKeyLength = -1;
    let previousSeparator: Buffer | null = null;
    let dataEnd = 0;
    let numDataBlocks = 0;
    let numEntries = 0;
    let numDeletions = 0;
    let numMerges = 0;
    let rawKeyBytes = 0;
    let rawValueBytes = 0;
    for (index.first(); index.valid(); index.next()) {
      const separator = Buffer.from(index.key());
      const handle = { offset: index.handleOffset, size: index.handleSize };
      if (previousSeparator !== null && this.compareSeparators(separator, previousSeparator) <= 0) {
        fail(indexHandle.offset, `index separators out of order at data block ${numDataBlocks}`);
      }
      if (handle.offset < dataEnd) fail(handle.offset, `data block ${numDataBlocks} overlaps the previous one (ends at ${dataEnd})`);
      const block = Block.parse(this.readBlock(handle, 'data', true), this.path, handle.offset);
      this.checkRestartEntries(block, true);
      data.reset(block);
      let firstInBlock = true;
      for (data.first(); data.valid(); data.next()) {
        const key = data.key();
        if (firstInBlock) {
          if (previousSeparator !== null && this.compareWithSeparator(key, previousSeparator) <= 0) {
            fail(handle.offset, `first key of data block ${numDataBlocks} is not above the previous block's index separator`);
          }
          firstInBlock = false;
        }
        if (previousKeyLength >= 0 && data.compareKeyTo(previousKey, 0, previousKeyLength) <= 0) {
          fail(handle.offset, `keys out of order at entry offset ${data.currentEntryOffset()} of data block ${numDataBlocks}`);
        }
        const type = typeOf(key);
        if (type === ValueType.Deletion || type === ValueType.SingleDeletion || type === 0x14) numDeletions++;
        else if (type === ValueType.Merge) numMerges++;
        else if (type === ValueType.RangeDeletion || type === ValueType.Seek) fail(handle.offset, `entry of type 0x${type.toString(16)} in a data block`);
        if (!this.keyMayMatch(key.subarray(0, key.length - TRAILER_BYTES))) fail(handle.offset, 'the filter rejects a key stored in the table');
        numEntries++;
        rawKeyBytes += key.length;
        rawValueBytes += data.value().length;
        if (key.length > previousKey.length) previousKey = Buffer.allocUnsafe(2 * key.length);
        key.copy(previousKey, 0);
        previousKeyLength = key.length;
      }
      if (!firstInBlock && this.compareWithSeparator(previousKey.subarray(0, previousKeyLength), separator) > 0) {
        fail(handle.offset, `last key of data block ${numDataBlocks} is above its index separator`);
      }
      previousSeparator = separator;
      dataEnd = handle.offset + handle.size + BLOCK_TRAILER_BYTES;
      numDataBlocks++;
    }

    // Range tombstones.
    let numRangeDeletions = 0;
    for (const t of this.tombstones) {
      numRangeDeletions++;
      rawKeyBytes += t.start.length + TRAILER_BYTES;
      rawValueBytes += t.end.length;
    }
    numEntries += numRangeDeletions;
    numDeletions += numRangeDeletions;

    // Properties against contents (only those the file records).
    const props = this.properties;
    const expect = (name: string, recorded: number, actual: number): void => {
      if (props.raw.has(name) && recorded !== actual) {
        fail(this.metaHandles.get(META_PROPERTIES)?.offset ?? 0, `property ${name} is ${recorded} but the table holds ${actual}`);
      }
    };
    expect(Prop.NumEntries, props.numEntries, numEntries);
    expect(Prop.NumDataBlocks, props.numDataBlocks, numDataBlocks);
    expect(Prop.DeletedKeys, props.numDeletions, numDeletions);
    expect(Prop.MergeOperands, props.numMergeOperands, numMerges);
    expect(Prop.NumRangeDeletions, props.numRangeDeletions, numRangeDeletions);
    expect(Prop.RawKeySize, props.rawKeySize, rawKeyBytes);
    expect(Prop.RawValueSize, props.rawValueSize, rawValueBytes);
    expect(Prop.DataSize, props.dataSize, dataEnd);
    expect(Prop.IndexSize, props.indexSize, indexBytes + BLOCK_TRAILER_BYTES);
  }

  // --- internals -----------------------------------------------------------------------------

  private checkOpen(): void {
    if (this.fd < 0) throw new IngestError('INVALID_ARGUMENT', `table ${this.path} is closed`);
  }

  /** Compares an internal key with an index separator under the index's key kind. */
  private compareWithSeparator(key: Buffer, separator: Buffer): number {
    perf.keyComparisons++;
    if (this.indexKeyIsUserKey) return compareByteRanges(key, 0, key.length - TRAILER_BYTES, separator, 0, separator.length);
    return compareInternalKeyRanges(key, 0, key.length, separator, 0, separator.length);
  }

  private compareSeparators(a: Buffer, b: Buffer): number {
    perf.keyComparisons++;
    if (this.indexKeyIsUserKey) return compareByteRanges(a, 0, a.length, b, 0, b.length);
    return compareInternalKeyRanges(a, 0, a.length, b, 0, b.length);
  }

  private checkRestartEntries(block: Block, hasValueLength: boolean): void {
    for (let i = 0; i < block.numRestarts; i++) block.restartKeyOffset(i, hasValueLength);
  }

  private readAt(position: number, length: number): Buffer {
    const buf = Buffer.allocUnsafe(length);
    this.readInto(buf, 0, position, length);
    return buf;
  }

  /** Reads `length` bytes at file offset `position` into `buf[offset, offset + length)`. */
  private readInto(buf: Buffer, offset: number, position: number, length: number): void {
    let done = 0;
    while (done < length) {
      let n: number;
      try {
        n = fs.readSync(this.fd, buf, offset + done, length - done, position + done);
      } catch (e) {
        throw new IngestError('IO', `cannot read ${length} bytes at offset ${position} of ${this.path}: ${(e as Error).message}`, { cause: e });
      }
      if (n === 0) throw new CorruptionError(this.path, position, `file ends ${length - done} bytes early`);
      done += n;
    }
  }

  /** Before any read: the reader is open and the handle (plus trailer) lies inside the file's blocks. */
  private checkBlockHandle(handle: BlockHandle, kind: BlockKind): void {
    this.checkOpen();
    const blocksEnd = this.fileSizeBytes - this.footer.footerBytes;
    if (handle.size > MAX_BLOCK_BYTES || handle.offset + handle.size + BLOCK_TRAILER_BYTES > blocksEnd) {
      throw new CorruptionError(this.path, handle.offset, `${kind} block handle (${handle.offset}, ${handle.size}) lies outside the file's ${blocksEnd} block bytes`);
    }
  }

  /**
   * Reads a block and its 5-byte trailer, unverified, after checking the handle lies inside the
   * file. The result is only valid until the next read: blocks up to READ_SCRATCH_MAX_BYTES land
   * in the reader's scratch buffer (a fresh 4 KiB+ Buffer per read costs more than the read
   * itself), so decompress() copies what it returns out of it. The LZ4_NAPI_SIZE_BYTES bytes
   * before the result belong to the reader too: decompress() frames LZ4 payloads in place there.
   */
  private readRawBlock(handle: BlockHandle, kind: BlockKind): Buffer {
    this.checkBlockHandle(handle, kind);
    const length = handle.size + BLOCK_TRAILER_BYTES;
    const frameBytes = LZ4_NAPI_SIZE_BYTES + length;
    let frame: Buffer;
    if (frameBytes <= READ_SCRATCH_MAX_BYTES) {
      if (this.readScratch.length < frameBytes) this.readScratch = Buffer.allocUnsafe(Math.min(READ_SCRATCH_MAX_BYTES, Math.max(frameBytes, 2 * this.readScratch.length)));
      frame = this.readScratch;
    } else {
      frame = Buffer.allocUnsafe(frameBytes);
    }
    this.readInto(frame, LZ4_NAPI_SIZE_BYTES, handle.offset, length);
    perf.blockBytesRead += length;
    return frame.subarray(LZ4_NAPI_SIZE_BYTES, frameBytes);
  }

  private checksumMatches(buf: Buffer, size: number): boolean {
    const stored = buf.readUInt32LE(size + 1);
    return computeBlockChecksum(this.footer.checksumType, buf, 0, size, buf[size]) === stored;
  }

  private checksumError(buf: Buffer, handle: BlockHandle, kind: BlockKind): CorruptionError {
    const stored = buf.readUInt32LE(handle.size + 1);
    const computed = computeBlockChecksum(this.footer.checksumType, buf, 0, handle.size, buf[handle.size]);
    return new CorruptionError(this.path, handle.offset, `${kind} block checksum mismatch: stored 0x${stored.toString(16)}, computed 0x${computed.toString(16)}`);
  }

  /** Reads, verifies (if asked) and decompresses one block; returns its contents. */
  private readBlock(handle: BlockHandle, kind: BlockKind, verify: boolean, arena: BlockArena | null = null): Buffer {
    if (this.nativeCodec !== null) return this.readBlockNative(this.nativeCodec, handle, kind, verify, arena);
    const buf = this.readRawBlock(handle, kind);
    if (verify && !this.checksumMatches(buf, handle.size)) throw this.checksumError(buf, handle, kind);
    return this.decompress(buf, handle, kind);
  }

  /**
   * readBlock() in one native call (src/sstable/nativeBlockCodec.ts): the same checks, the same errors.
   */
  private readBlockNative(codec: NativeBlockCodec, handle: BlockHandle, kind: BlockKind, verify: boolean, arena: BlockArena | null): Buffer {
    this.checkBlockHandle(handle, kind);
    perf.blockBytesRead += handle.size + BLOCK_TRAILER_BYTES;
    try {
      if (arena !== null) return arena.readBlock(codec, this.fd, handle.offset, handle.size, this.footer.checksumType, verify, MAX_BLOCK_BYTES);
      return codec.readBlock(this.fd, handle.offset, handle.size, this.footer.checksumType, verify, MAX_BLOCK_BYTES);
    } catch (e) {
      throw this.nativeReadError(e, handle, kind);
    }
  }

  /** Maps a native codec error to the error the JavaScript path throws for the same fault. */
  private nativeReadError(e: unknown, handle: BlockHandle, kind: BlockKind): Error {
    if (!isNativeCodecError(e)) return e instanceof Error ? e : new Error(`${kind} block read failed: ${String(e)}`);
    switch (e.code) {
      case 'SHORT_READ':
        return new CorruptionError(this.path, handle.offset, `${kind} block: ${e.message}`);
      case 'CHECKSUM_MISMATCH':
        return new CorruptionError(this.path, handle.offset, `${kind} block checksum mismatch: stored 0x${(e.stored ?? 0).toString(16)}, computed 0x${(e.computed ?? 0).toString(16)}`);
      case 'LZ4_MALFORMED':
        return new CorruptionError(this.path, handle.offset, `${kind} block does not decompress: ${e.message}`);
      case 'UNSUPPORTED_COMPRESSION':
        return new IngestError(
          'NOT_SUPPORTED',
          `${this.path}: ${kind} block at offset ${handle.offset} uses ${compressionName(e.compressionType ?? -1)} compression; only NoCompression, LZ4 and LZ4HC are supported`,
        );
      case 'IO':
        return new IngestError('IO', `cannot read ${handle.size + BLOCK_TRAILER_BYTES} bytes at offset ${handle.offset} of ${this.path}: ${e.message}`, { cause: e });
      default:
        return e;
    }
  }

  /**
   * The contents of a block from readRawBlock() in memory of their own (blocks outlive the
   * scratch buffer: the cache and iterators keep them). Destroys an LZ4 payload's size header.
   */
  private decompress(buf: Buffer, handle: BlockHandle, kind: BlockKind): Buffer {
    const type = buf[handle.size];
    const payload = buf.subarray(0, handle.size);
    switch (type) {
      case CompressionType.None:
        return payload.buffer === this.readScratch.buffer ? Buffer.from(payload) : payload;
      case CompressionType.LZ4:
      case CompressionType.LZ4HC: {
        this.checkLz4SizeHeader(payload, handle, kind);
        try {
          // readRawBlock left LZ4_NAPI_SIZE_BYTES of room before the payload.
          const frame = Buffer.from(buf.buffer, buf.byteOffset - LZ4_NAPI_SIZE_BYTES, LZ4_NAPI_SIZE_BYTES + handle.size);
          return lz4DecompressBlockInPlace(frame, LZ4_NAPI_SIZE_BYTES, frame.length, this.footer.formatVersion);
        } catch (e) {
          throw new CorruptionError(this.path, handle.offset, `${kind} block does not decompress: ${(e as Error).message}`);
        }
      }
      default:
        throw new IngestError(
          'NOT_SUPPORTED',
          `${this.path}: ${kind} block at offset ${handle.offset} uses ${compressionName(type)} compression; only NoCompression, LZ4 and LZ4HC are supported`,
        );
    }
  }

  /** Rejects an LZ4 size header that would make us allocate more than the payload can expand to. */
  private checkLz4SizeHeader(payload: Buffer, handle: BlockHandle, kind: BlockKind): void {
    if (this.footer.formatVersion < 2) return; // never reached: fv < 2 is rejected at open
    let size: number;
    try {
      size = readVarint32(payload, 0);
    } catch (e) {
      throw new CorruptionError(this.path, handle.offset, `${kind} block: bad LZ4 size header: ${(e as Error).message}`);
    }
    const body = payload.length - decoded.offset;
    if (size > MAX_BLOCK_BYTES || size > body * LZ4_MAX_EXPANSION + 16) {
      throw new CorruptionError(this.path, handle.offset, `${kind} block: LZ4 size header ${size} is implausible for ${body} payload bytes`);
    }
  }

  /** Decodes every entry of a bytewise-keyed block with raw values. */
  private iterateRaw<T>(block: Block, visit: (key: Buffer, value: Buffer) => T): T[] {
    const it = new BlockIterator(block, { order: compareByteRanges });
    const out: T[] = [];
    for (it.first(); it.valid(); it.next()) out.push(visit(it.key(), it.value()));
    return out;
  }

  private readMetaindex(): Map<string, BlockHandle> {
    const handle = this.footer.metaindexHandle;
    const block = Block.parse(this.readBlock(handle, 'metaindex', this.verifyChecksums), this.path, handle.offset);
    const out = new Map<string, BlockHandle>();
    this.iterateRaw(block, (key, value) => {
      let h: BlockHandle;
      try {
        h = readBlockHandle(value, 0);
      } catch (e) {
        throw new CorruptionError(this.path, handle.offset, `metaindex entry "${key.toString('latin1')}" has a bad handle: ${(e as Error).message}`);
      }
      out.set(key.toString('latin1'), h);
    });
    return out;
  }

  private readProperties(): TableProperties {
    const handle = this.metaHandles.get(META_PROPERTIES);
    if (handle === undefined) return decodePropertyMap(new Map());
    const map = this.readPropertiesContents(handle, this.verifyChecksums);
    try {
      return decodePropertyMap(map);
    } catch (e) {
      throw new CorruptionError(this.path, handle.offset, `properties block: ${(e as Error).message}`);
    }
  }

  /**
   * Reads the properties block into name → value copies, checking names are strictly increasing.
   * If the checksum fails, retries with the global-seqno value bytes zeroed: ingestion rewrites
   * them in place without updating the checksum (properties blocks are never compressed).
   */
  private readPropertiesContents(handle: BlockHandle, verify: boolean): Map<string, Buffer> {
    const buf = this.readRawBlock(handle, 'properties');
    if (verify && !this.checksumMatches(buf, handle.size)) {
      const seqnoValueOffset = buf[handle.size] === CompressionType.None ? this.findGlobalSeqnoValue(buf.subarray(0, handle.size), handle) : -1;
      if (seqnoValueOffset < 0) throw this.checksumError(buf, handle, 'properties');
      const zeroed = Buffer.from(buf);
      zeroed.fill(0, seqnoValueOffset, seqnoValueOffset + 8);
      if (!this.checksumMatches(zeroed, handle.size)) throw this.checksumError(buf, handle, 'properties');
    }
    const block = Block.parse(this.decompress(buf, handle, 'properties'), this.path, handle.offset);
    const map = new Map<string, Buffer>();
    let previousName: Buffer | null = null;
    this.iterateRaw(block, (key, value) => {
      if (previousName !== null && Buffer.compare(previousName, key) >= 0) {
        throw new CorruptionError(this.path, handle.offset, `properties out of order: "${key.toString('latin1')}" after "${previousName.toString('latin1')}"`);
      }
      previousName = Buffer.from(key);
      map.set(key.toString('utf8'), Buffer.from(value));
    });
    return map;
  }

  /**
   * Offset of the 8-byte global-seqno value in unverified properties contents, or -1 when the
   * block has none or does not even parse (then the checksum error is the better report).
   */
  private findGlobalSeqnoValue(contents: Buffer, handle: BlockHandle): number {
    try {
      const block = Block.parse(contents, this.path, handle.offset);
      const it = new BlockIterator(block, { order: compareByteRanges });
      it.seekGE(Buffer.from(Prop.GlobalSeqno, 'latin1'));
      if (!it.valid() || it.key().toString('latin1') !== Prop.GlobalSeqno || it.value().length !== 8) return -1;
      return it.value().byteOffset - contents.byteOffset;
    } catch (e) {
      if (e instanceof CorruptionError) return -1;
      throw e;
    }
  }

  private checkSupported(props: TableProperties): void {
    if (props.comparatorName !== '' && props.comparatorName !== BYTEWISE_COMPARATOR) {
      throw new IngestError('NOT_SUPPORTED', `${this.path}: comparator "${props.comparatorName}" is not supported (only ${BYTEWISE_COMPARATOR})`);
    }
    if (!SUPPORTED_COMPRESSION_NAMES.has(props.compressionName)) {
      throw new IngestError('NOT_SUPPORTED', `${this.path}: compression ${props.compressionName} is not supported (only NoCompression, LZ4 and LZ4HC)`);
    }
    // The hash-search index is an ordinary binary-search index plus side blocks we ignore.
    if (props.indexType !== INDEX_BINARY_SEARCH && props.indexType !== INDEX_HASH_SEARCH && props.indexType !== INDEX_TWO_LEVEL) {
      throw new IngestError('NOT_SUPPORTED', `${this.path}: index type ${props.indexType} is not supported (only binary search, hash search and two-level)`);
    }
    if (props.externalSstFileVersion > 2) {
      throw new IngestError('NOT_SUPPORTED', `${this.path}: external SST file version ${props.externalSstFileVersion} is not supported`);
    }
  }

  private resolveGlobalSeqno(props: TableProperties, fromManifest: number | undefined): number {
    if (props.externalSstFileVersion !== 2) return -1; // version 1 and DB-written files keep their seqnos
    if (props.globalSeqno !== 0) {
      if (fromManifest !== undefined && fromManifest !== props.globalSeqno) {
        throw new CorruptionError(this.path, this.metaHandles.get(META_PROPERTIES)?.offset ?? 0, `global seqno property ${props.globalSeqno} disagrees with the MANIFEST's ${fromManifest}`);
      }
      return props.globalSeqno;
    }
    return fromManifest ?? 0;
  }

  private readFilter(props: TableProperties): FilterReader | PartitionedFilter | null {
    // A prefix-only filter cannot answer whole-key lookups.
    if (!props.wholeKeyFiltering) return null;
    for (const [name, handle] of this.metaHandles) {
      if (name.startsWith(FULL_FILTER_PREFIX)) {
        const contents = this.readBlock(handle, 'filter', this.verifyChecksums);
        perf.filterBlocksRead++;
        return FilterReader.fromBlock(contents); // never throws: an unreadable filter answers "maybe"
      }
      if (name.startsWith(PARTITIONED_FILTER_PREFIX)) {
        const partitionIndex = Block.parse(this.readBlock(handle, 'filter', this.verifyChecksums), this.path, handle.offset);
        perf.filterBlocksRead++;
        const toIndexKey = this.indexKeyIsUserKey ? (userKey: Buffer) => userKey : (userKey: Buffer) => makeInternalKey(userKey, MAX_SEQUENCE_NUMBER, ValueType.Seek);
        return new PartitionedFilter(this.indexBlockIterator(partitionIndex), toIndexKey, (offset, size) => {
          perf.filterBlocksRead++;
          return this.readBlock({ offset, size }, 'filter', this.verifyChecksums);
        });
      }
    }
    return null;
  }

  private readRangeTombstones(): RangeTombstone[] {
    const handle = this.metaHandles.get(META_RANGE_DEL);
    if (handle === undefined) return [];
    const block = Block.parse(this.readBlock(handle, 'range_del', this.verifyChecksums), this.path, handle.offset);
    const it = new BlockIterator(block, { order: compareInternalKeyRanges, internalKeys: true, globalSeqno: this.globalSeqno });
    const out: RangeTombstone[] = [];
    // Stored order, not key order: walk forward only, never seek.
    for (it.first(); it.valid(); it.next()) {
      const key = it.key();
      if (typeOf(key) !== ValueType.RangeDeletion) {
        throw new CorruptionError(this.path, handle.offset, `range_del entry of type 0x${typeOf(key).toString(16)}`);
      }
      out.push({ start: Buffer.from(key.subarray(0, key.length - TRAILER_BYTES)), end: Buffer.from(it.value()), seq: sequenceOf(key) });
    }
    return out;
  }
}

/** A Buffer view of `bytes` (no copy). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
