/**
 * A parsed key/value block (data, index, metaindex, properties, range_del) and the iterator over
 * it.
 *
 * On disk (contents after decompression; the 5-byte trailer is already stripped):
 *   entry_0 … entry_{n-1} ‖ [hash index] ‖ restart_0 … restart_{r-1} (u32le) ‖ u32le footer word
 *   entry = varint32 shared ‖ varint32 non_shared ‖ [varint32 value_length] ‖ key delta ‖ value
 * The footer word is r, except that for blocks of at most 64 KiB bit 31 flags a data-block hash
 * index (bucket bytes ‖ u16le bucket count) between the restart array and the footer word. We
 * never use the hash index (binary search over restarts answers every query), we only step over
 * it. A restart entry stores its whole key (shared = 0).
 *
 * Contract:
 * - `Block.parse` validates the layout once (size, restart count, restart offsets strictly
 *   increasing and inside the entry area, first restart at 0) and throws CorruptionError
 *   otherwise. Entries are validated lazily as they are decoded: every varint, key and value is
 *   bounds-checked against the entry area, and every step moves strictly forward, so a corrupt
 *   block throws CorruptionError and can neither read out of range nor loop.
 * - `BlockIterator` implements InternalIterator under a caller-chosen key order, so the same code
 *   walks data and range_del blocks (internal keys), index blocks (internal or user keys) and
 *   metaindex/properties blocks (bytewise).
 * - Keys are rebuilt into one growable buffer per iterator (no allocation per entry); `key()` is a
 *   view of it. Views die when the iterator moves, as the InternalIterator contract says.
 * - Index blocks decode their values into `handleOffset` / `handleSize`, either from a
 *   length-prefixed BlockHandle (format_version <= 3) or from the delta encoding of
 *   format_version >= 4 (no value length; an entry with shared > 0 stores only the size delta and
 *   its offset follows the previous block).
 * - `globalSeqno` (ingested files): every key is presented with its sequence number replaced,
 *   type kept. The raw key stays in the buffer between moves, because the next entry's shared
 *   prefix may reach into the previous key's trailer.
 * - `prev()` re-scans from the restart point before the current entry, caching the decoded
 *   entries of that restart interval (as RocksDB does) so a run of `prev()` calls costs one scan
 *   per interval, not one per entry.
 * - `seekGE(target, {trySeekUsingNext: true})` on a positioned iterator searches forward only:
 *   the current entry, up to TRY_SEEK_USING_NEXT_STEPS next keys (older versions of a key
 *   already below the target are stepped over without comparisons and do not count), then the
 *   restart keys after the current interval by galloping, so its cost grows with the distance
 *   moved rather than the block's size.
 */
import { InternalIterator, SeekOptions, TRY_SEEK_USING_NEXT_STEPS } from '../../base/iterator';
import { perf } from '../../base/perfContext';
import { decoded, readVarint32, readVarint64, zigzagDecode } from '../../util/coding';
import { CorruptionError, assert } from '../../util/errors';
import { compareByteRanges, compareInternalKeyRanges } from '../../base/keyCompare';
import { BLOCK_TRAILER_BYTES } from '../checksum';
import { TRAILER_BYTES, writeTrailer } from '../../base/internalKey';
import { BlockSearchIo, nativeSearch, SEARCH_DECLINED, SEARCH_PAST_END, SearchOrder, searchIo } from './nativeSearch';

/**
 * A total order over key byte ranges `a[aStart, aStart + aLength)` and `b[bStart, bStart + bLength)`,
 * e.g. compareByteRanges (bytewise) or compareInternalKeyRanges from src/base/keyCompare.ts.
 * Range-based so the iterator compares keys where they lie (key buffer, block bytes) without
 * making views.
 */
export type KeyOrder = (a: Buffer, aStart: number, aLength: number, b: Buffer, bStart: number, bLength: number) => number;

/** How an entry's value is stored. */
export enum BlockValueFormat {
  /** varint32 length-prefixed bytes (data, range_del, metaindex, properties blocks). */
  Raw = 0,
  /** Length-prefixed BlockHandle (index blocks, format_version <= 3). */
  Handle = 1,
  /** No length; full handle at shared = 0, else varsigned size delta (format_version >= 4). */
  DeltaHandle = 2,
}

/** Blocks up to this size may carry the data-block hash index flag in bit 31 of the footer word. */
const MAX_BLOCK_BYTES_WITH_HASH_INDEX = 1 << 16;
const HASH_INDEX_FLAG = 0x80000000;
const U32_BYTES = 4;
const U16_BYTES = 2;
/** Entries are header varints plus bytes; a restart interval has at least one entry of >= 2 bytes. */
const MIN_ENTRY_BYTES = 2;

/** Block contents with a validated restart array. Immutable; shared by iterators and the cache. */
export class Block {
  /**
   * Decompressed contents without trailer. Replaced only by leaveArena(), by an identical copy;
   * iterators keep the buffer they started with, which stays valid.
   */
  data: Buffer;
  /** End of the entry area, which is where the restart array starts. */
  readonly entriesEnd: number;
  /** Number of restart points; 0 for a block without entries. */
  readonly numRestarts: number;
  /** File and block offset, only to label errors. */
  readonly fileName: string;
  readonly blockOffset: number;

  /** `data` is a view of a shared arena slab (src/sstable/reader/blockArena.ts) rather than memory of its own. */
  private arenaBacked = false;

  private constructor(data: Buffer, entriesEnd: number, numRestarts: number, fileName: string, blockOffset: number) {
    this.data = data;
    this.entriesEnd = entriesEnd;
    this.numRestarts = numRestarts;
    this.fileName = fileName;
    this.blockOffset = blockOffset;
  }

  /**
   * Validates the block layout; throws CorruptionError naming `fileName` and `blockOffset`.
   * `arenaBacked`: `data` is a view of an arena slab (see leaveArena).
   */
  static parse(data: Buffer, fileName: string, blockOffset: number, arenaBacked = false): Block {
    const block = Block.parseLayout(data, fileName, blockOffset);
    block.arenaBacked = arenaBacked;
    return block;
  }

  /**
   * Moves an arena-backed block's contents into memory of its own, so that a block kept for long
   * (the cache calls this on a hit) does not keep its whole slab alive. Idempotent.
   */
  leaveArena(): void {
    if (!this.arenaBacked) return;
    this.data = Buffer.from(this.data);
    this.arenaBacked = false;
  }

  private static parseLayout(data: Buffer, fileName: string, blockOffset: number): Block {
    const fail = (reason: string): never => {
      throw new CorruptionError(fileName, blockOffset, `block of ${data.length} bytes: ${reason}`);
    };
    if (data.length < U32_BYTES) fail('too short for a restart count');
    const footerWordOffset = data.length - U32_BYTES;
    const footerWord = data.readUInt32LE(footerWordOffset);
    let numRestarts = footerWord;
    let restartArrayEnd = footerWordOffset;
    if (data.length <= MAX_BLOCK_BYTES_WITH_HASH_INDEX && (footerWord & HASH_INDEX_FLAG) !== 0) {
      numRestarts = footerWord & ~HASH_INDEX_FLAG;
      if (footerWordOffset < U16_BYTES) fail('too short for its hash index');
      const numBuckets = data.readUInt16LE(footerWordOffset - U16_BYTES);
      restartArrayEnd = footerWordOffset - U16_BYTES - numBuckets;
      if (restartArrayEnd < 0) fail(`hash index of ${numBuckets} buckets does not fit`);
    }
    if (numRestarts > restartArrayEnd / U32_BYTES) fail(`${numRestarts} restart points do not fit`);
    // Entries end where the restart array starts (the hash index, if any, follows the array).
    const entriesEnd = restartArrayEnd - numRestarts * U32_BYTES;
    if (numRestarts === 0 || entriesEnd === 0) {
      // No entries. RocksDB writes an empty block as restart[0] = 0, r = 1.
      for (let i = 0; i < numRestarts; i++) {
        if (data.readUInt32LE(entriesEnd + i * U32_BYTES) !== 0) fail('empty block with a non-zero restart offset');
      }
      return new Block(data, 0, 0, fileName, blockOffset);
    }
    let previous = -1;
    for (let i = 0; i < numRestarts; i++) {
      const r = data.readUInt32LE(entriesEnd + i * U32_BYTES);
      if (i === 0 && r !== 0) fail(`first restart point is ${r}, not 0`);
      if (r <= previous || r > entriesEnd - MIN_ENTRY_BYTES)
        fail(`restart point ${i} at ${r} is out of order or outside the ${entriesEnd} entry bytes`);
      previous = r;
    }
    return new Block(data, entriesEnd, numRestarts, fileName, blockOffset);
  }

  restartPoint(i: number): number {
    const d = this.data;
    const o = this.entriesEnd + i * U32_BYTES;
    return (d[o] | (d[o + 1] << 8) | (d[o + 2] << 16)) + d[o + 3] * 0x1000000;
  }

  /**
   * Where the key of restart entry `i` lies in `data` (restart entries store whole keys):
   * returns its offset and leaves its length in `this.restartKeyLength`. `hasValueLength` says
   * whether entries carry a value-length varint (all but delta-encoded index blocks). Throws
   * CorruptionError if the entry shares bytes or runs past the entries.
   */
  restartKeyOffset(i: number, hasValueLength: boolean): number {
    const entryOffset = this.restartPoint(i);
    const data = this.data;
    const limit = this.entriesEnd;
    let p = entryOffset;
    let shared: number;
    // Fast path: single-byte shared and key-length varints (keys under 128 bytes) and a value
    // length of one or two bytes (values under 16 KiB).
    if (
      p + 3 <= limit &&
      (data[p] | data[p + 1]) < 128 &&
      (!hasValueLength || data[p + 2] < 128 || (p + 4 <= limit && data[p + 3] < 128))
    ) {
      shared = data[p];
      this.restartKeyLength = data[p + 1];
      p += !hasValueLength ? 2 : data[p + 2] < 128 ? 3 : 4;
    } else {
      try {
        shared = readVarint32(data, p, limit);
        this.restartKeyLength = readVarint32(data, decoded.offset, limit);
        p = decoded.offset;
        if (hasValueLength) {
          readVarint32(data, p, limit);
          p = decoded.offset;
        }
      } catch (e) {
        throw this.corruption(entryOffset, (e as Error).message);
      }
    }
    if (shared !== 0) throw this.corruption(entryOffset, `restart entry shares ${shared} key bytes`);
    if (this.restartKeyLength > limit - p)
      throw this.corruption(entryOffset, `key of ${this.restartKeyLength} bytes runs past the entries`);
    return p;
  }

  /** Output slot of `restartKeyOffset`: the length of the key it located (like coding.ts's `decoded`). */
  restartKeyLength = 0;

  /** Bytes the block holds in memory, for cache charging. */
  get chargeBytes(): number {
    return this.data.length;
  }

  corruption(offsetInBlock: number, reason: string): CorruptionError {
    return new CorruptionError(this.fileName, this.blockOffset, `${reason} (entry at ${offsetInBlock} of the block)`);
  }
}

export interface BlockIteratorOptions {
  order: KeyOrder;
  valueFormat?: BlockValueFormat;
  /** Keys must be internal keys (>= 8 bytes); checked as they are decoded. */
  internalKeys?: boolean;
  /** Replace every key's sequence number with this (ingested files); -1 = keep. */
  globalSeqno?: number;
  /**
   * Steps a trySeekUsingNext seek takes before galloping over the restart points (default
   * TRY_SEEK_USING_NEXT_STEPS). Index blocks take none: each of their entries is a restart point
   * (or nearly), so the gallop's first probes are those steps, at no more cost, and a step
   * decodes a block handle besides.
   */
  trySeekSteps?: number;
}

const EMPTY = Buffer.alloc(0);

const enum KnownOrder {
  Other = 0,
  Internal = 1,
  Bytewise = 2,
}
/** compareToTarget's answer for a key whose user key is below the target's. */
const USER_KEY_BELOW = -2;
const NO_INT32S = new Int32Array(0);
const NO_FLOAT64S = new Float64Array(0);
const INITIAL_KEY_CAPACITY_BYTES = 64;
const INITIAL_INTERVAL_ENTRIES = 16;

export class BlockIterator implements InternalIterator {
  private block: Block | null = null;
  private data: Buffer = EMPTY;
  /** End of the entry area. */
  private limit = 0;
  private readonly order: KeyOrder;
  /** `order` when it is one of the two engine orders, called directly (see compare()). */
  private readonly knownOrder: KnownOrder;
  private readonly valueFormat: BlockValueFormat;
  private readonly minKeyBytes: number;
  private readonly globalSeqno: number;
  private readonly trySeekSteps: number;

  /** Offset of the current entry, or -1 when not positioned. */
  private entryOffset = -1;
  private valueStart = 0;
  private valueEnd = 0;
  /** Raw key of the current entry (trailer possibly patched, see `patched`). */
  private keyBuf: Buffer = Buffer.allocUnsafe(INITIAL_KEY_CAPACITY_BYTES);
  private keyLength = 0;
  /**
   * A view of keyBuf[0, length): kept across moves while the key length stays (keys are often
   * all one size), since a view only promises the current key anyway; null after keyBuf grows.
   */
  private keyView: Buffer | null = null;
  private valueView: Buffer | null = null;
  /**
   * Global seqno as the 7 sequence bytes of a trailer (trailer byte 0 is the type, kept), and the
   * key's original sequence bytes while keyBuf carries the patched ones.
   */
  private readonly seqnoBytes: Buffer = EMPTY;
  private readonly savedSeqnoBytes: Buffer = EMPTY;
  private patched = false;
  /** Set by findLastRestartBelow: the restart whose key equals the target, or -1. */
  private exactRestart = -1;
  /** A restart index at or before the current entry's interval (see restartOfCurrentEntry). */
  private restartHint = 0;
  /** Key bytes the entry parsed last shares with the key before it (see advanceTo). */
  private sharedBytes = 0;

  /** Decoded block handle of the current entry (index value formats). */
  handleOffset = 0;
  handleSize = 0;

  // Cache of one restart interval's entries, for prev(). Keys are copied raw into cacheKeys.
  // Allocated on the first backward move: most iterators (point lookups, forward scans, one
  // per table per seek) never make one.
  private cacheCount = 0;
  /** Index of the current entry in the cache, or -1 when the cache does not describe it. */
  private cacheIndex = -1;
  private cacheEntryOffsets: Int32Array = NO_INT32S;
  private cacheValueStarts: Int32Array = NO_INT32S;
  private cacheValueEnds: Int32Array = NO_INT32S;
  private cacheKeyStarts: Int32Array = NO_INT32S;
  private cacheKeyLengths: Int32Array = NO_INT32S;
  private cacheHandleOffsets: Float64Array = NO_FLOAT64S;
  private cacheHandleSizes: Float64Array = NO_FLOAT64S;
  private cacheKeys: Buffer = EMPTY;
  private cacheKeysLength = 0;

  constructor(block: Block | null, options: BlockIteratorOptions) {
    this.order = options.order;
    this.knownOrder =
      options.order === compareInternalKeyRanges
        ? KnownOrder.Internal
        : options.order === compareByteRanges
          ? KnownOrder.Bytewise
          : KnownOrder.Other;
    this.valueFormat = options.valueFormat ?? BlockValueFormat.Raw;
    this.minKeyBytes = options.internalKeys ? TRAILER_BYTES : 0;
    this.globalSeqno = options.globalSeqno ?? -1;
    this.trySeekSteps = options.trySeekSteps ?? TRY_SEEK_USING_NEXT_STEPS;
    assert(this.trySeekSteps >= 0, 'trySeekSteps must be >= 0');
    assert(this.globalSeqno < 0 || this.minKeyBytes === TRAILER_BYTES, 'a global seqno applies to internal keys only');
    if (this.globalSeqno >= 0) {
      this.seqnoBytes = Buffer.alloc(TRAILER_BYTES);
      this.savedSeqnoBytes = Buffer.alloc(TRAILER_BYTES);
      writeTrailer(this.seqnoBytes, 0, this.globalSeqno, 0);
    }
    if (block !== null) this.reset(block);
  }

  /** Re-targets the iterator at another block (not positioned afterwards). */
  reset(block: Block): void {
    this.block = block;
    this.data = block.data;
    this.limit = block.entriesEnd;
    this.restartHint = 0;
    this.invalidate();
  }

  currentBlock(): Block | null {
    return this.block;
  }

  valid(): boolean {
    return this.entryOffset >= 0;
  }

  /**
   * Where the current entry starts, as a fraction of the block's entry bytes (0 when not
   * positioned): with the block's place in its file, an approximate position in the table
   * (TableIterator.approximateFileOffset), for estimating how many entries a scan passed.
   */
  get entryFraction(): number {
    return this.entryOffset <= 0 || this.limit === 0 ? 0 : this.entryOffset / this.limit;
  }

  key(): Buffer {
    if (this.keyView === null || this.keyView.length !== this.keyLength) this.keyView = this.keyBuf.subarray(0, this.keyLength);
    return this.keyView;
  }

  value(): Buffer {
    if (this.valueView === null) this.valueView = this.data.subarray(this.valueStart, this.valueEnd);
    return this.valueView;
  }

  /** The current key's length, and its bytes in `keyBytes()[0, keyLength)`; no view is made. */
  keyBytesLength(): number {
    return this.keyLength;
  }
  keyBytes(): Buffer {
    return this.keyBuf;
  }

  /** Offset of the current entry inside the block (for diagnostics and verify()). */
  currentEntryOffset(): number {
    return this.entryOffset;
  }

  /** Compares the current key with `other[start, start + length)` under the iterator's order. Counts one comparison. */
  compareKeyTo(other: Buffer, start = 0, length = other.length - start): number {
    perf.keyComparisons++;
    return this.compare(this.keyBuf, 0, this.keyLength, other, start, length);
  }

  first(): void {
    this.cacheIndex = -1;
    if (this.block === null || this.block.numRestarts === 0) return this.invalidate();
    this.parseRestartEntry(0);
    this.finishPosition();
  }

  last(): void {
    if (this.block === null || this.block.numRestarts === 0) return this.invalidate();
    this.fillIntervalCache(this.block.numRestarts - 1, this.limit, null);
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    if (opts !== undefined && opts.trySeekUsingNext === true && this.entryOffset >= 0) {
      this.seekGEForward(target);
      return;
    }
    this.cacheIndex = -1;
    if (this.block === null || this.block.numRestarts === 0) return this.invalidate();
    if (nativeSearch !== null && this.knownOrder !== KnownOrder.Other && this.nativeSeekGE(this.block, target)) return;
    const r = this.findLastRestartBelow(target);
    if (this.exactRestart >= 0) {
      this.parseRestartEntry(this.exactRestart);
      this.finishPosition();
      return;
    }
    this.parseRestartEntry(r < 0 ? 0 : r);
    this.finishPosition();
    if (r < 0) return; // the first key is already >= target
    // Restart r's key is < target: scan to the first key >= target. The scan never passes
    // restart r + 1, whose key is > target.
    this.advanceTo(target, false, this.intervalEnd(r));
  }

  /**
   * seekGE through native/blockSearch.c: the same binary search and scan, step for step (the same
   * entry, the same comparisons counted), over the block's bytes in one call. False when it
   * declined (a malformed entry, a key longer than keyBuf, a key or target too short for an
   * internal key's trailer): the JavaScript search then runs from the start and grows keyBuf or reports the
   * corruption with its file and entry. keyBuf's raw bytes are overwritten either way, which
   * the search from a restart point never needs.
   */
  private nativeSeekGE(block: Block, target: Buffer): boolean {
    const internal = this.knownOrder === KnownOrder.Internal;
    const io = searchIo;
    io[BlockSearchIo.EntriesEnd] = block.entriesEnd;
    io[BlockSearchIo.NumRestarts] = block.numRestarts;
    io[BlockSearchIo.Order] = internal ? SearchOrder.Internal : SearchOrder.Bytewise;
    io[BlockSearchIo.ValueFormat] = this.valueFormat;
    io[BlockSearchIo.MinKeyBytes] = this.minKeyBytes;
    io[BlockSearchIo.GlobalSeqno] = this.globalSeqno;
    io[BlockSearchIo.Comparisons] = 0;
    this.patched = false;
    const found = (nativeSearch as NonNullable<typeof nativeSearch>).blockSeekGE(this.data, target, this.keyBuf, io);
    if (found === SEARCH_DECLINED) return false;
    perf.keyComparisons += io[BlockSearchIo.Comparisons];
    if (found === SEARCH_PAST_END) {
      this.invalidate();
      return true;
    }
    this.entryOffset = found;
    this.keyLength = io[BlockSearchIo.KeyLength];
    this.sharedBytes = io[BlockSearchIo.SharedBytes];
    this.valueStart = io[BlockSearchIo.ValueStart];
    this.valueEnd = io[BlockSearchIo.ValueEnd];
    this.restartHint = io[BlockSearchIo.RestartIndex];
    this.handleOffset = io[BlockSearchIo.HandleOffset];
    this.handleSize = io[BlockSearchIo.HandleSize];
    this.finishPosition();
    return true;
  }

  seekLT(target: Buffer): void {
    if (this.block === null || this.block.numRestarts === 0) return this.invalidate();
    const r = this.findLastRestartBelow(target);
    if (r < 0) return this.invalidate(); // even the first key is >= target
    // Every key before restart r + 1 that is < target lies in interval r.
    this.fillIntervalCache(r, this.intervalEnd(r), target);
  }

  next(): void {
    if (this.entryOffset < 0) throw new Error('BlockIterator.next() on an unpositioned iterator');
    this.advance();
  }

  prev(): void {
    if (this.entryOffset < 0) throw new Error('BlockIterator.prev() on an unpositioned iterator');
    const block = this.block as Block;
    const current = this.entryOffset;
    if (this.cacheIndex > 0 && this.cacheEntryOffsets[this.cacheIndex] === current) {
      this.loadCachedEntry(this.cacheIndex - 1);
      return;
    }
    let r = this.findRestartOfOffset(current);
    if (block.restartPoint(r) === current) r--;
    if (r < 0) return this.invalidate();
    this.fillIntervalCache(r, current, null);
  }

  close(): void {
    this.block = null;
    this.data = EMPTY;
    this.invalidate();
  }

  // --- internals ---------------------------------------------------------------------------

  private invalidate(): void {
    this.entryOffset = -1;
    // keyView stays: it is a view of keyBuf, right again as soon as a key of its length is there.
    this.valueView = null;
    this.patched = false;
    this.cacheIndex = -1;
    this.cacheCount = 0;
  }

  /** Moves to the next entry; returns false (and invalidates) at the end of the block. */
  private advance(): boolean {
    const nextOffset = this.valueEnd;
    if (nextOffset >= this.limit) {
      this.invalidate();
      return false;
    }
    this.parseEntry(nextOffset, false);
    if (this.cacheIndex >= 0) {
      // Keep the interval cache pointing at the current entry while it still covers it.
      this.cacheIndex =
        this.cacheIndex + 1 < this.cacheCount && this.cacheEntryOffsets[this.cacheIndex + 1] === nextOffset ? this.cacheIndex + 1 : -1;
    }
    this.finishPosition();
    return true;
  }

  private intervalEnd(restartIndex: number): number {
    const block = this.block as Block;
    return restartIndex + 1 < block.numRestarts ? block.restartPoint(restartIndex + 1) : this.limit;
  }

  /**
   * seekGE under trySeekUsingNext: the caller promises that every entry before the current one
   * is < target (it has not stepped past the answer), so the answer is the current entry or a
   * later one, and nothing before the current restart interval needs looking at. Stay if the
   * current key is >= target; else take up to `trySeekSteps` steps (TRY_SEEK_USING_NEXT_STEPS,
   * Pebble's few nexts: on interleaved data the answer is usually close; none in index blocks),
   * not counting the older versions of
   * a user key below the target's, which are stepped over uncompared; else gallop over the
   * restart keys after the current interval (1, 2, 4, ... restarts ahead), binary-search the
   * bracket found, and scan forward from the last restart
   * below the target, or from the current entry if that is still in the same interval. The cost
   * grows with the log of the distance moved, not of the block's size, and a target within the
   * current interval costs no restart comparison at all. Runs off the block's end (invalid) when
   * every key left is < target: the table iterator then moves on to the next block.
   */
  private seekGEForward(target: Buffer): void {
    let c = this.compareToTarget(target);
    if (c >= 0) return;
    // A few steps first (the answer is usually close). The older versions of a user key below
    // the target's are stepped over first, without comparisons and without counting as steps:
    // a skip costs less than one restart comparison of the gallop below, and it stops at the
    // block's end, so this walks at most the block's entries.
    for (let i = 0; i < this.trySeekSteps; i++) {
      if (c === USER_KEY_BELOW) while (this.skipOlderVersion()) continue;
      if (!this.advance()) return;
      c = this.compareToTarget(target);
      if (c >= 0) return;
    }
    const block = this.block as Block;
    const current = this.restartOfCurrentEntry();
    // Restarts <= below start at or before the current entry, so their keys are < target;
    // restarts >= above have keys > target (or do not exist).
    let below = current;
    let above = block.numRestarts;
    for (let step = 1; below + step < above; step *= 2) {
      const r = this.compareRestartKey(below + step, target);
      if (r === 0) return this.positionAtRestart(below + step);
      if (r > 0) {
        above = below + step;
        break;
      }
      below += step;
    }
    while (above - below > 1) {
      const mid = (below + above) >>> 1;
      const r = this.compareRestartKey(mid, target);
      if (r === 0) return this.positionAtRestart(mid);
      if (r < 0) below = mid;
      else above = mid;
    }
    // The current entry, or restart `below`, is < target; restart `above` is > target.
    if (below === current) return this.advanceTo(target, c === USER_KEY_BELOW, this.intervalEnd(above - 1));
    this.positionAtRestart(below);
    this.advanceTo(target, false, this.intervalEnd(above - 1));
  }

  /**
   * From an entry below target: steps to the first key >= target, or off the block's end.
   * `userKeyBelow`: the current entry's user key is known to be below the target's. In
   * internal-key blocks an entry holding the same user key as the one before it (same length,
   * sharing the whole user key: in a sorted block nothing else can) is an older version of it,
   * so once that user key compared below the target's, its other versions are stepped over
   * without a comparison: a seek past a key with many versions compares each user key once.
   * `aboveOffset`: the offset of an entry already known to be > target (the restart point the
   * caller's search found above it, from intervalEnd), taken without comparing it again; the
   * entry area's end when no restart lies above, where advance() stops first.
   */
  private advanceTo(target: Buffer, userKeyBelow: boolean, aboveOffset: number): void {
    for (;;) {
      const previousKeyLength = this.keyLength;
      if (userKeyBelow && this.skipOlderVersion()) continue;
      if (!this.advance()) return;
      if (this.entryOffset === aboveOffset) return;
      if (userKeyBelow && this.keyLength === previousKeyLength && this.sharedBytes >= this.keyLength - TRAILER_BYTES) continue;
      const c = this.compareToTarget(target);
      if (c >= 0) return;
      userKeyBelow = c === USER_KEY_BELOW;
    }
  }

  /**
   * Compares the current key with target like compareKeyTo, except that in internal-key blocks
   * a user key below the target's answers USER_KEY_BELOW rather than -1 (-1 is then the same
   * user key with a trailer sorting first). Counts one comparison.
   */
  private compareToTarget(target: Buffer): number {
    if (this.knownOrder !== KnownOrder.Internal) {
      const c = this.compareKeyTo(target);
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    perf.keyComparisons++;
    const keyBuf = this.keyBuf;
    const keyLength = this.keyLength;
    const targetLength = target.length;
    const c = compareByteRanges(keyBuf, 0, keyLength - TRAILER_BYTES, target, 0, targetLength - TRAILER_BYTES);
    if (c !== 0) return c < 0 ? USER_KEY_BELOW : 1;
    // Same user key: trailers order descending, from the most significant byte down.
    for (let i = 1; i <= TRAILER_BYTES; i++) {
      const ours = keyBuf[keyLength - i];
      const theirs = target[targetLength - i];
      if (ours !== theirs) return ours > theirs ? -1 : 1;
    }
    return 0;
  }

  /**
   * advanceTo's step over an entry it needs no comparison for: if the next entry of a data
   * block is another version of the current user key (same key length, sharing the whole user
   * key) with one- or two-byte header varints, steps onto it decoding only what the entry after
   * it needs (its key's trailer bytes and the value's extent) and returns true. Returns false,
   * having moved nothing, for anything else (another key, the block's end, index values, a
   * global seqno, an entry that does not fit the block, which parseEntry then reports), which
   * advance() then handles.
   */
  private skipOlderVersion(): boolean {
    const data = this.data;
    const limit = this.limit;
    const entryOffset = this.valueEnd;
    // Index values (block handles) must be decoded entry by entry, and a global seqno patched.
    if (this.valueFormat !== BlockValueFormat.Raw || this.globalSeqno >= 0 || entryOffset + 4 > limit) return false;
    const shared = data[entryOffset];
    const nonShared = data[entryOffset + 1];
    const keyLength = this.keyLength;
    if ((shared | nonShared) >= 128 || shared + nonShared !== keyLength || shared < keyLength - TRAILER_BYTES) return false;
    let p = entryOffset + 2;
    let valueLength = data[p];
    if (valueLength < 128) {
      p += 1;
    } else if (data[p + 1] < 128) {
      valueLength = (valueLength & 0x7f) | (data[p + 1] << 7);
      p += 2;
    } else {
      return false;
    }
    if (nonShared + valueLength > limit - p) return false;
    const keyBuf = this.keyBuf;
    for (let i = 0; i < nonShared; i++) keyBuf[shared + i] = data[p + i];
    this.sharedBytes = shared;
    this.entryOffset = entryOffset;
    this.valueStart = p + nonShared;
    this.valueEnd = this.valueStart + valueLength;
    this.valueView = null;
    this.cacheIndex = -1;
    return true;
  }

  private positionAtRestart(restartIndex: number): void {
    this.cacheIndex = -1;
    this.parseRestartEntry(restartIndex);
    this.finishPosition();
  }

  /**
   * The restart interval holding the current entry, found by walking forward from restartHint
   * (positioning methods keep the hint at or before the current entry's interval, so a forward
   * walk costs what the iterator moved since), or by binary search if the hint is past it.
   */
  private restartOfCurrentEntry(): number {
    const block = this.block as Block;
    const offset = this.entryOffset;
    let r = this.restartHint;
    if (r >= block.numRestarts || block.restartPoint(r) > offset) r = this.findRestartOfOffset(offset);
    while (r + 1 < block.numRestarts && block.restartPoint(r + 1) <= offset) r++;
    this.restartHint = r;
    return r;
  }

  /** Index of the last restart point whose offset is <= `offset`. */
  private findRestartOfOffset(offset: number): number {
    const block = this.block as Block;
    let lo = 0;
    let hi = block.numRestarts - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (block.restartPoint(mid) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Binary search over restart keys: the last restart point whose key is < target, or -1 when
   * the first key is already >= target. If a restart key equals the target, the search stops
   * early and `exactRestart` names it (the result is then the restart before it); otherwise
   * `exactRestart` is -1.
   */
  private findLastRestartBelow(target: Buffer): number {
    const block = this.block as Block;
    let lo = 0;
    let hi = block.numRestarts - 1;
    // Invariant: restarts < lo have keys < target; restarts > hi have keys > target.
    this.exactRestart = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.compareRestartKey(mid, target);
      if (c < 0) {
        lo = mid + 1;
      } else if (c > 0) {
        hi = mid - 1;
      } else {
        this.exactRestart = mid;
        return mid - 1;
      }
    }
    return lo - 1;
  }

  /** Compares restart `i`'s key with `target` (restart key first). */
  private compareRestartKey(i: number, target: Buffer): number {
    const block = this.block as Block;
    const p = block.restartKeyOffset(i, this.valueFormat !== BlockValueFormat.DeltaHandle);
    const keyLength = block.restartKeyLength;
    if (keyLength < this.minKeyBytes)
      throw block.corruption(block.restartPoint(i), `internal key of ${keyLength} bytes is shorter than its trailer`);
    perf.keyComparisons++;
    if (this.globalSeqno < 0) return this.compare(this.data, p, keyLength, target, 0, target.length);
    // Compare as presented, with the global seqno in the trailer, without copying the key:
    // user keys first, then the trailers from the most significant byte down (descending order).
    const userKeyLength = keyLength - TRAILER_BYTES;
    const c = compareByteRanges(this.data, p, userKeyLength, target, 0, target.length - TRAILER_BYTES);
    if (c !== 0) return c;
    const targetTrailer = target.length - TRAILER_BYTES;
    for (let i = TRAILER_BYTES - 1; i >= 0; i--) {
      const ours = i === 0 ? this.data[p + userKeyLength] : this.seqnoBytes[i];
      const theirs = target[targetTrailer + i];
      if (ours !== theirs) return ours > theirs ? -1 : 1;
    }
    return 0;
  }

  /**
   * `order`, with the engine's two orders called by name: a call through the field sees several
   * functions across iterators and stays an indirect call on the hottest path of every search.
   */
  private compare(a: Buffer, aStart: number, aLength: number, b: Buffer, bStart: number, bLength: number): number {
    switch (this.knownOrder) {
      case KnownOrder.Internal:
        return compareInternalKeyRanges(a, aStart, aLength, b, bStart, bLength);
      case KnownOrder.Bytewise:
        return compareByteRanges(a, aStart, aLength, b, bStart, bLength);
      default:
        return this.order(a, aStart, aLength, b, bStart, bLength);
    }
  }

  private varint32At(p: number, entryOffset: number): number {
    try {
      return readVarint32(this.data, p, this.limit);
    } catch (e) {
      throw (this.block as Block).corruption(entryOffset, (e as Error).message);
    }
  }

  private parseRestartEntry(restartIndex: number): void {
    this.restartHint = restartIndex;
    this.parseEntry((this.block as Block).restartPoint(restartIndex), true);
  }

  /**
   * Decodes the entry at `p` using the current key as the previous key. Leaves the raw key in
   * keyBuf (unpatched) and sets the value range and handle; does not touch views or the cache.
   */
  private parseEntry(p: number, atRestart: boolean): void {
    if (this.patched) this.unpatchTrailer();
    const data = this.data;
    const limit = this.limit;
    const entryOffset = p;
    let shared: number;
    let nonShared: number;
    let valueLength = 0;
    // Fast path: single-byte shared and non-shared varints (always so for keys under 128 bytes),
    // and a value length of one or two bytes (values under 16 KiB).
    if (p + 3 <= limit && (data[p] | data[p + 1]) < 128) {
      shared = data[p];
      nonShared = data[p + 1];
      p += 2;
      if (this.valueFormat !== BlockValueFormat.DeltaHandle) {
        const b = data[p];
        if (b < 128) {
          valueLength = b;
          p += 1;
        } else if (p + 2 <= limit && data[p + 1] < 128) {
          valueLength = (b & 0x7f) | (data[p + 1] << 7);
          p += 2;
        } else {
          valueLength = this.varint32At(p, entryOffset);
          p = decoded.offset;
        }
      }
    } else {
      shared = this.varint32At(p, entryOffset);
      p = decoded.offset;
      nonShared = this.varint32At(p, entryOffset);
      p = decoded.offset;
      if (this.valueFormat !== BlockValueFormat.DeltaHandle) {
        valueLength = this.varint32At(p, entryOffset);
        p = decoded.offset;
      }
    }
    const block = this.block as Block;
    if (atRestart && shared !== 0) throw block.corruption(entryOffset, `restart entry shares ${shared} key bytes`);
    // At a restart the previous key is irrelevant; elsewhere it is keyBuf[0, keyLength).
    if (shared > (atRestart ? 0 : this.keyLength))
      throw block.corruption(entryOffset, `shares ${shared} bytes with a ${this.keyLength}-byte previous key`);
    if (nonShared > limit - p) throw block.corruption(entryOffset, `key delta of ${nonShared} bytes runs past the entries`);
    const keyLength = shared + nonShared;
    if (keyLength < this.minKeyBytes) throw block.corruption(entryOffset, `internal key of ${keyLength} bytes is shorter than its trailer`);
    if (keyLength > this.keyBuf.length) this.growKeyBuf(keyLength, shared);
    const keyBuf = this.keyBuf;
    if (nonShared <= 32) {
      for (let i = 0; i < nonShared; i++) keyBuf[shared + i] = data[p + i];
    } else {
      data.copy(keyBuf, shared, p, p + nonShared);
    }
    this.keyLength = keyLength;
    this.sharedBytes = shared;
    p += nonShared;
    this.valueStart = p;
    switch (this.valueFormat) {
      case BlockValueFormat.Raw:
        if (valueLength > limit - p) throw block.corruption(entryOffset, `value of ${valueLength} bytes runs past the entries`);
        this.valueEnd = p + valueLength;
        break;
      case BlockValueFormat.Handle: {
        if (valueLength > limit - p) throw block.corruption(entryOffset, `value of ${valueLength} bytes runs past the entries`);
        this.valueEnd = p + valueLength;
        this.decodeHandle(p, this.valueEnd, entryOffset);
        break;
      }
      case BlockValueFormat.DeltaHandle:
        if (shared === 0) {
          this.decodeHandle(p, limit, entryOffset);
        } else {
          // Delta from the previous entry: blocks are contiguous, so only the size moves.
          let delta: number;
          try {
            delta = zigzagDecode(readVarint64(data, p, limit));
          } catch (e) {
            throw block.corruption(entryOffset, (e as Error).message);
          }
          const size = this.handleSize + delta;
          if (size < 0) throw block.corruption(entryOffset, `delta-encoded block size ${size} is negative`);
          this.handleOffset = this.handleOffset + this.handleSize + BLOCK_TRAILER_BYTES;
          this.handleSize = size;
        }
        this.valueEnd = decoded.offset;
        break;
    }
    this.entryOffset = entryOffset;
  }

  private decodeHandle(p: number, end: number, entryOffset: number): void {
    try {
      this.handleOffset = readVarint64(this.data, p, end);
      this.handleSize = readVarint64(this.data, decoded.offset, end);
    } catch (e) {
      throw (this.block as Block).corruption(entryOffset, `bad block handle: ${(e as Error).message}`);
    }
  }

  private growKeyBuf(neededBytes: number, keepBytes: number): void {
    const next = Buffer.allocUnsafe(Math.max(neededBytes, 2 * this.keyBuf.length));
    this.keyBuf.copy(next, 0, 0, keepBytes);
    this.keyBuf = next;
    this.keyView = null;
  }

  /** Publishes the decoded entry: drops stale views and applies the global seqno. */
  private finishPosition(): void {
    this.valueView = null;
    if (this.globalSeqno >= 0) {
      // Byte-wise: an 8-byte Buffer#copy costs more than the loop. Keys already carrying the
      // seqno (e.g. seqno 0 over SstFileWriter's stored 0) need no patch.
      const keyBuf = this.keyBuf;
      const t = this.keyLength - TRAILER_BYTES;
      let differs = false;
      for (let i = 1; i < TRAILER_BYTES; i++) {
        if (keyBuf[t + i] !== this.seqnoBytes[i]) differs = true;
      }
      if (differs) {
        for (let i = 1; i < TRAILER_BYTES; i++) {
          this.savedSeqnoBytes[i] = keyBuf[t + i];
          keyBuf[t + i] = this.seqnoBytes[i];
        }
        this.patched = true;
      }
    }
  }

  private unpatchTrailer(): void {
    const t = this.keyLength - TRAILER_BYTES;
    for (let i = 1; i < TRAILER_BYTES; i++) this.keyBuf[t + i] = this.savedSeqnoBytes[i];
    this.patched = false;
  }

  /**
   * Decodes restart interval `restartIndex` from its start, caching every entry, and stops
   * before the entry at `stopOffset` or before the first key >= `target` (if given). Positions on
   * the last cached entry, or invalidates if none was cached.
   */
  private fillIntervalCache(restartIndex: number, stopOffset: number, target: Buffer | null): void {
    this.cacheCount = 0;
    this.cacheKeysLength = 0;
    this.restartHint = restartIndex;
    let p = (this.block as Block).restartPoint(restartIndex);
    let atRestart = true;
    let reachedTarget = false;
    while (p < stopOffset) {
      this.parseEntry(p, atRestart);
      atRestart = false;
      if (target !== null) {
        this.finishPosition(); // compare the presented (global-seqno) key
        if (this.compareKeyTo(target) >= 0) {
          reachedTarget = true;
          break;
        }
      }
      this.cacheEntry();
      p = this.valueEnd;
    }
    if (!reachedTarget && p !== stopOffset) {
      throw (this.block as Block).corruption(p, `entries overrun the restart interval ending at ${stopOffset}`);
    }
    if (this.cacheCount === 0) return this.invalidate();
    this.loadCachedEntry(this.cacheCount - 1);
  }

  private cacheEntry(): void {
    if (this.patched) this.unpatchTrailer();
    const i = this.cacheCount;
    if (i === this.cacheEntryOffsets.length) this.growCache();
    const keyLength = this.keyLength;
    if (this.cacheKeysLength + keyLength > this.cacheKeys.length) {
      const next = Buffer.allocUnsafe(
        Math.max(this.cacheKeysLength + keyLength, 2 * this.cacheKeys.length, INITIAL_KEY_CAPACITY_BYTES * INITIAL_INTERVAL_ENTRIES),
      );
      this.cacheKeys.copy(next, 0, 0, this.cacheKeysLength);
      this.cacheKeys = next;
    }
    this.keyBuf.copy(this.cacheKeys, this.cacheKeysLength, 0, keyLength);
    this.cacheEntryOffsets[i] = this.entryOffset;
    this.cacheValueStarts[i] = this.valueStart;
    this.cacheValueEnds[i] = this.valueEnd;
    this.cacheKeyStarts[i] = this.cacheKeysLength;
    this.cacheKeyLengths[i] = keyLength;
    this.cacheHandleOffsets[i] = this.handleOffset;
    this.cacheHandleSizes[i] = this.handleSize;
    this.cacheKeysLength += keyLength;
    this.cacheCount = i + 1;
  }

  private growCache(): void {
    const n = Math.max(INITIAL_INTERVAL_ENTRIES, this.cacheEntryOffsets.length * 2);
    const grow32 = (a: Int32Array): Int32Array => {
      const b = new Int32Array(n);
      b.set(a);
      return b;
    };
    const grow64 = (a: Float64Array): Float64Array => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.cacheEntryOffsets = grow32(this.cacheEntryOffsets);
    this.cacheValueStarts = grow32(this.cacheValueStarts);
    this.cacheValueEnds = grow32(this.cacheValueEnds);
    this.cacheKeyStarts = grow32(this.cacheKeyStarts);
    this.cacheKeyLengths = grow32(this.cacheKeyLengths);
    this.cacheHandleOffsets = grow64(this.cacheHandleOffsets);
    this.cacheHandleSizes = grow64(this.cacheHandleSizes);
  }

  private loadCachedEntry(i: number): void {
    const keyLength = this.cacheKeyLengths[i];
    if (keyLength > this.keyBuf.length) this.growKeyBuf(keyLength, 0);
    const start = this.cacheKeyStarts[i];
    this.cacheKeys.copy(this.keyBuf, 0, start, start + keyLength);
    this.patched = false;
    this.keyLength = keyLength;
    this.entryOffset = this.cacheEntryOffsets[i];
    this.valueStart = this.cacheValueStarts[i];
    this.valueEnd = this.cacheValueEnds[i];
    this.handleOffset = this.cacheHandleOffsets[i];
    this.handleSize = this.cacheHandleSizes[i];
    this.cacheIndex = i;
    this.finishPosition();
  }
}
