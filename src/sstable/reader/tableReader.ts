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
 * them in place); the index block; the range_del block. The filter is read at the first lookup
 * that asks it (keyMayMatch). All of them then stay in memory for the reader's lifetime
 * (RocksDB's default with cache_index_and_filter_blocks off); data blocks go through the block
 * cache when one is given.
 *
 * The parts elsewhere: reading one block from the file (checksum, decompression, the native
 * codec, the data-block arena) is src/sstable/reader/blockFetcher.ts; the whole-file check behind
 * verify() is src/sstable/reader/verify.ts; the two-level iterator is tableIterator.ts.
 *
 * Contract:
 * - Every block read verifies its checksum unless `verifyChecksums` is false; a mismatch, a
 *   malformed block or an undecodable payload is a CorruptionError naming the file and block
 *   offset. Blocks are decompressed by their trailer type: NoCompression, Snappy, Zlib, LZ4,
 *   LZ4HC, ZSTD and ZSTDNotFinal (src/sstable/compression.ts).
 * - Partitioned (two-level) indexes and partitioned filters are read through
 *   src/sstable/reader/partitionedIndex.ts; index partitions go through the block cache like data blocks.
 * - Not supported (IngestError NOT_SUPPORTED, naming the file): format_version outside 2..5,
 *   the binary-search-with-first-key index type, BZip2 and Xpress compression (by the
 *   rocksdb.compression property at open, by the trailer for any block), a non-empty compression
 *   dictionary (meta block rocksdb.compression_dict: its ZSTD/zlib blocks need it to decode),
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
import { BlockHandle, readBlockHandle } from '../../util/coding';
import { CorruptionError, IngestError } from '../../util/errors';
import { READABLE_COMPRESSION_NAMES } from '../compression';
import { decodeFooter, Footer } from '../footer';
import {
  FOOTER_BYTES,
  FULL_FILTER_PREFIX,
  META_COMPRESSION_DICT,
  META_PROPERTIES,
  META_RANGE_DEL,
  MAX_SUPPORTED_FORMAT_VERSION,
  MIN_SUPPORTED_FORMAT_VERSION,
  PARTITIONED_FILTER_PREFIX,
} from '../format';
import { SeekKeyBuilder, makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, TRAILER_BYTES, typeOf, ValueType } from '../../base/internalKey';
import { decodePropertyMap, TableProperties } from '../properties';
import { Block, BlockIterator, BlockValueFormat, KeyOrder } from './block';
import { BlockCache, BlockCacheHandle, UncachedBlock } from './blockCache';
import { BlockPrefetcher } from './blockPrefetcher';
import { BlockFetcher, readFileBytes } from './blockFetcher';
import { FilterReader } from './filterReader';
import { PartitionedFilter, PartitionedIndexIterator } from './partitionedIndex';
import { IndexIterator, TableBlockSource, TableIterator, TableIteratorOptions } from './tableIterator';
import { FragmentedTombstoneList, fragmentTombstones } from '../../base/fragmenter';
import { IndexPartitionLoader, TableEntrySizes, verifyTable } from './verify';

// Moved with block fetching; re-exported so that importers of the reader keep one place to look.
export { MAX_BLOCK_BYTES } from './blockFetcher';

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

const BYTEWISE_COMPARATOR = 'leveldb.BytewiseComparator';
/** rocksdb.compression values we open: the readable codecs, and '' (no property). */
const SUPPORTED_COMPRESSION_NAMES: ReadonlySet<string> = new Set(['', ...READABLE_COMPRESSION_NAMES]);
/** Index types (rocksdb.block.based.table.index.type). */
const INDEX_BINARY_SEARCH = 0;
const INDEX_HASH_SEARCH = 1;
const INDEX_TWO_LEVEL = 2;

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
  /**
   * The filter, read on first use (undefined until then): most readers that never look a key up
   * (an SST being checked or ingested, a compaction's inputs) never need it, and a full filter is
   * about 1.2 bytes per key (625 KB for a 500,000-key table at 10 bits per key), read, checksummed
   * and held for nothing. A read error surfaces at that first lookup, as a corrupt data block does.
   */
  private filterState: FilterReader | PartitionedFilter | null | undefined = undefined;
  private readonly filterProperties: TableProperties;
  private readonly tombstones: RangeTombstone[];
  /** `tombstones` fragmented for search; built on first use (most tables have none). */
  private fragments: FragmentedTombstoneList | null = null;
  private readonly metaHandles: Map<string, BlockHandle>;
  private readonly verifyChecksums: boolean;
  private readonly blockCache: BlockCache | null;
  private readonly cacheId: number;
  /** Reads this file's blocks; owns the file descriptor. */
  private readonly blocks: BlockFetcher;
  /** get()'s seek target (see pointSeekKey). */
  private readonly seekKeys = new SeekKeyBuilder();
  /** Reused by get(): iterators carry key buffers worth keeping. */
  private pointIterator: TableIterator | null = null;

  private constructor(path: string, fd: number, fileSizeBytes: number, opts: TableReaderOptions) {
    this.path = path;
    this.fileSizeBytes = fileSizeBytes;
    this.fileNumber = opts.fileNumber;
    this.verifyChecksums = opts.verifyChecksums ?? true;
    this.blockCache = opts.blockCache ?? null;
    this.cacheId = this.blockCache === null ? 0 : this.blockCache.newCacheId();

    const tail = readFileBytes(fd, path, Math.max(0, fileSizeBytes - FOOTER_BYTES), Math.min(FOOTER_BYTES, fileSizeBytes));
    this.footer = decodeFooter(tail, fileSizeBytes, path);
    this.blocks = new BlockFetcher(path, fd, fileSizeBytes, this.footer, opts.useNativeCodec ?? true);
    const fv = this.footer.formatVersion;
    if (fv < MIN_SUPPORTED_FORMAT_VERSION || fv > MAX_SUPPORTED_FORMAT_VERSION) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `${path}: format_version ${fv} is not supported (this reader handles ${MIN_SUPPORTED_FORMAT_VERSION}..${MAX_SUPPORTED_FORMAT_VERSION})`,
      );
    }

    this.metaHandles = this.readMetaindex();
    this.properties = this.readProperties();
    const props = this.properties;
    this.checkSupported(props);
    this.globalSeqno = this.resolveGlobalSeqno(props, opts.globalSeqno);

    this.indexKeyIsUserKey = props.indexKeyIsUserKey;
    this.indexValueFormat = props.indexValueIsDeltaEncoded ? BlockValueFormat.DeltaHandle : BlockValueFormat.Handle;
    this.partitionedIndex = props.indexType === INDEX_TWO_LEVEL;
    this.indexBlock = Block.parse(
      this.blocks.readBlock(this.footer.indexHandle, 'index', this.verifyChecksums),
      path,
      this.footer.indexHandle.offset,
    );
    perf.indexBlocksRead++;
    this.filterProperties = props;
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
    let filter = this.filterState;
    if (filter === undefined) filter = this.filterState = this.readFilter(this.filterProperties);
    if (filter === null) return true;
    perf.bloomChecks++;
    if (filter.keyMayMatch(asBuffer(userKey))) return true;
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
    if (this.fragments === null)
      this.fragments = this.tombstones.length === 0 ? FragmentedTombstoneList.EMPTY : fragmentTombstones(this.rangeTombstones());
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
    if (!this.blocks.isOpen) return;
    this.pointIterator?.close();
    this.pointIterator = null;
    this.blocks.close();
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

  private indexIterator(indexBlock: Block, loadPartition: IndexPartitionLoader): IndexIterator {
    if (!this.partitionedIndex) return this.indexBlockIterator(indexBlock);
    return new PartitionedIndexIterator(this.indexBlockIterator(indexBlock), this.indexBlockIterator(null), loadPartition);
  }

  private loadIndexPartition(offset: number, size: number): BlockCacheHandle {
    this.blocks.checkOpen(); // directly, not through checkOpen(): one call less per block
    if (this.blockCache !== null) {
      const hit = this.blockCache.lookup(this.cacheId, offset);
      if (hit !== null) return hit;
    }
    const block = Block.parse(this.blocks.readBlock({ offset, size }, 'index', this.verifyChecksums), this.path, offset);
    perf.indexBlocksRead++;
    if (this.blockCache !== null) return this.blockCache.insert(this.cacheId, offset, block);
    return new UncachedBlock(block);
  }

  newDataBlockIterator(): BlockIterator {
    return new BlockIterator(null, { order: compareInternalKeyRanges, internalKeys: true, globalSeqno: this.globalSeqno });
  }

  loadDataBlock(offset: number, size: number, fillCache = true, prefetcher?: BlockPrefetcher): BlockCacheHandle {
    this.blocks.checkOpen(); // directly, not through checkOpen(): one call less per block
    if (this.blockCache !== null) {
      const hit = this.blockCache.lookup(this.cacheId, offset);
      if (hit !== null) return hit;
    }
    // On the native path the block is decoded into the shared arena (blockFetcher.ts).
    const arena = this.blocks.dataArena;
    const block = Block.parse(
      this.blocks.readBlock({ offset, size }, 'data', this.verifyChecksums, arena, prefetcher),
      this.path,
      offset,
      arena !== null,
    );
    perf.dataBlocksRead++;
    if (this.blockCache !== null && fillCache) return this.blockCache.insert(this.cacheId, offset, block);
    return new UncachedBlock(block);
  }

  // --- verification --------------------------------------------------------------------------

  /**
   * Checks the whole file, ignoring the cache and the verifyChecksums option: every block
   * checksum, key order inside and across data blocks, restart entries, index separators and
   * handles, the filter against every key, and the properties against the contents. Throws a
   * CorruptionError describing the first problem found (see src/sstable/reader/verify.ts).
   * Returns the sizes of the largest user key and value it read.
   */
  verify(): TableEntrySizes {
    this.checkOpen();
    // The view verify.ts works on: this reader's metadata and its own readers (verify is rare,
    // so the closures cost nothing that matters).
    return verifyTable({
      path: this.path,
      footer: this.footer,
      properties: this.properties,
      metaHandles: this.metaHandles,
      tombstones: this.tombstones,
      indexKeyIsUserKey: this.indexKeyIsUserKey,
      indexValueFormat: this.indexValueFormat,
      partitionedIndex: this.partitionedIndex,
      blocks: this.blocks,
      indexBlockIterator: (block) => this.indexBlockIterator(block),
      indexIterator: (indexBlock, loadPartition) => this.indexIterator(indexBlock, loadPartition),
      readPropertiesContents: (handle, verify) => this.readPropertiesContents(handle, verify),
      keyMayMatch: (userKey) => this.keyMayMatch(userKey),
    });
  }

  // --- internals -----------------------------------------------------------------------------

  private checkOpen(): void {
    this.blocks.checkOpen();
  }

  private readMetaindex(): Map<string, BlockHandle> {
    const handle = this.footer.metaindexHandle;
    const block = Block.parse(this.blocks.readBlock(handle, 'metaindex', this.verifyChecksums), this.path, handle.offset);
    const out = new Map<string, BlockHandle>();
    iterateRaw(block, (key, value) => {
      let h: BlockHandle;
      try {
        h = readBlockHandle(value, 0);
      } catch (e) {
        throw new CorruptionError(
          this.path,
          handle.offset,
          `metaindex entry "${key.toString('latin1')}" has a bad handle: ${(e as Error).message}`,
        );
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
   * The block's checksum may only match with the global-seqno value zeroed (blockFetcher.ts).
   */
  private readPropertiesContents(handle: BlockHandle, verify: boolean): Map<string, Buffer> {
    const block = Block.parse(this.blocks.readPropertiesBlock(handle, verify), this.path, handle.offset);
    const map = new Map<string, Buffer>();
    let previousName: Buffer | null = null;
    iterateRaw(block, (key, value) => {
      if (previousName !== null && Buffer.compare(previousName, key) >= 0) {
        throw new CorruptionError(
          this.path,
          handle.offset,
          `properties out of order: "${key.toString('latin1')}" after "${previousName.toString('latin1')}"`,
        );
      }
      previousName = Buffer.from(key);
      map.set(key.toString('utf8'), Buffer.from(value));
    });
    return map;
  }

  private checkSupported(props: TableProperties): void {
    if (props.comparatorName !== '' && props.comparatorName !== BYTEWISE_COMPARATOR) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `${this.path}: comparator "${props.comparatorName}" is not supported (only ${BYTEWISE_COMPARATOR})`,
      );
    }
    if (!SUPPORTED_COMPRESSION_NAMES.has(props.compressionName)) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `${this.path}: compression ${props.compressionName} is not supported (only ${READABLE_COMPRESSION_NAMES.join(', ')})`,
      );
    }
    const dict = this.metaHandles.get(META_COMPRESSION_DICT);
    if (dict !== undefined && dict.size > 0) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `${this.path}: ${props.compressionName} compression dictionaries (meta block ${META_COMPRESSION_DICT}, ${dict.size} bytes) are not supported`,
      );
    }
    // The hash-search index is an ordinary binary-search index plus side blocks we ignore.
    if (props.indexType !== INDEX_BINARY_SEARCH && props.indexType !== INDEX_HASH_SEARCH && props.indexType !== INDEX_TWO_LEVEL) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `${this.path}: index type ${props.indexType} is not supported (only binary search, hash search and two-level)`,
      );
    }
    if (props.externalSstFileVersion > 2) {
      throw new IngestError('NOT_SUPPORTED', `${this.path}: external SST file version ${props.externalSstFileVersion} is not supported`);
    }
  }

  private resolveGlobalSeqno(props: TableProperties, fromManifest: number | undefined): number {
    if (props.externalSstFileVersion !== 2) return -1; // version 1 and DB-written files keep their seqnos
    if (props.globalSeqno !== 0) {
      if (fromManifest !== undefined && fromManifest !== props.globalSeqno) {
        throw new CorruptionError(
          this.path,
          this.metaHandles.get(META_PROPERTIES)?.offset ?? 0,
          `global seqno property ${props.globalSeqno} disagrees with the MANIFEST's ${fromManifest}`,
        );
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
        const contents = this.blocks.readBlock(handle, 'filter', this.verifyChecksums);
        perf.filterBlocksRead++;
        return FilterReader.fromBlock(contents); // never throws: an unreadable filter answers "maybe"
      }
      if (name.startsWith(PARTITIONED_FILTER_PREFIX)) {
        const partitionIndex = Block.parse(this.blocks.readBlock(handle, 'filter', this.verifyChecksums), this.path, handle.offset);
        perf.filterBlocksRead++;
        const toIndexKey = this.indexKeyIsUserKey
          ? (userKey: Buffer) => userKey
          : (userKey: Buffer) => makeInternalKey(userKey, MAX_SEQUENCE_NUMBER, ValueType.Seek);
        return new PartitionedFilter(this.indexBlockIterator(partitionIndex), toIndexKey, (offset, size) => {
          perf.filterBlocksRead++;
          return this.blocks.readBlock({ offset, size }, 'filter', this.verifyChecksums);
        });
      }
    }
    return null;
  }

  private readRangeTombstones(): RangeTombstone[] {
    const handle = this.metaHandles.get(META_RANGE_DEL);
    if (handle === undefined) return [];
    const block = Block.parse(this.blocks.readBlock(handle, 'range_del', this.verifyChecksums), this.path, handle.offset);
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

/** Decodes every entry of a bytewise-keyed block with raw values. */
function iterateRaw<T>(block: Block, visit: (key: Buffer, value: Buffer) => T): T[] {
  const it = new BlockIterator(block, { order: compareByteRanges });
  const out: T[] = [];
  for (it.first(); it.valid(); it.next()) out.push(visit(it.key(), it.value()));
  return out;
}

/** A Buffer view of `bytes` (no copy). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
