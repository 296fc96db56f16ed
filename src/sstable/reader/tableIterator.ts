/**
 * The table iterator: a two-level iterator over one SST (index block → data blocks) that
 * presents the table's point entries as an InternalIterator.
 *
 * Layout it walks: the index holds one entry per data block, `separator → BlockHandle`, where
 * last key of block i <= separator i < first key of block i+1 (internal-key order, or user-key
 * order when the index stores user keys). Data blocks are loaded on demand through the table's
 * block source (block cache or file) and pinned while the iterator stands on them.
 *
 * Contract (beyond InternalIterator):
 * - Bounds are user keys: `lowerBound` inclusive, `upperBound` exclusive. `setBounds` may be called
 *   between positioning calls; the iterator must be re-positioned afterwards. Bound buffers are
 *   kept by reference and must not change until replaced.
 * - Bound checks follow RocksDB PR 5111: a block is checked against a bound once when the
 *   iterator enters it, and per key only if the block straddles the bound. Forward, the block's
 *   index separator (>= every key of the block) is compared with `upperBound`; backward, the
 *   block's first key (<= every key) is compared with `lowerBound`. Seeks clamp their targets to
 *   the bounds, so only the direction of travel needs checking. Every bound comparison counts
 *   in perf.boundComparisons (and perf.keyComparisons).
 * - `seekGE(target, {trySeekUsingNext})` (the caller has not moved past the answer; `next` in
 *   between is allowed): when the target falls inside the current data block (target <= its
 *   separator), the block iterator searches forward from where it stands, with no index search
 *   and no block lookup; otherwise the index iterator searches forward from the current block's
 *   entry (see BlockIterator) and only the block it lands on is loaded and searched. A seekGE
 *   that found nothing stays exhausted under trySeekUsingNext (targets only grow) until the
 *   iterator is repositioned otherwise.
 * - Empty data blocks are skipped in both directions.
 * - perf counts: seeks (first/last/seekGE/seekLT), nexts, prevs, and key comparisons.
 */
import { InternalIterator, SeekOptions } from '../../base/iterator';
import { perf } from '../../base/perfContext';
import { compareByteRanges, compareInternalKeyRanges } from '../../base/keyCompare';
import { assert } from '../../util/errors';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, TRAILER_BYTES, ValueType } from '../../base/internalKey';
import { BLOCK_TRAILER_BYTES } from '../checksum';
import { BlockIterator } from './block';
import { BlockCacheHandle } from './blockCache';
import { BlockPrefetcher } from './blockPrefetcher';

/**
 * An iterator over index entries `separator → data block handle`: a single index block's
 * BlockIterator, or a partitioned index's two-level iterator. `keyBytes()[0, keyBytesLength())`
 * is the separator without making a view.
 */
export interface IndexIterator {
  valid(): boolean;
  first(): void;
  last(): void;
  seekGE(target: Buffer, opts?: SeekOptions): void;
  next(): void;
  prev(): void;
  close(): void;
  key(): Buffer;
  keyBytes(): Buffer;
  keyBytesLength(): number;
  readonly handleOffset: number;
  readonly handleSize: number;
  /** Drops the position and any pinned partition, staying usable (partitioned indexes only). */
  unpin?(): void;
}

/** What the iterator needs from its table: the index, and data blocks by handle. */
export interface TableBlockSource {
  /** True when index keys are user keys (rocksdb.index.key.is.user.key = 1). */
  readonly indexKeyIsUserKey: boolean;
  /** A fresh iterator over the index (values decoded into handleOffset/handleSize). */
  newIndexIterator(): IndexIterator;
  /** A fresh, unpositioned iterator for data blocks (internal keys, global seqno applied). */
  newDataBlockIterator(): BlockIterator;
  /**
   * Loads (or finds in the cache) the data block at `offset` of `size` bytes, pinned. With
   * fillCache false, a block not in the cache is read without being inserted (compaction reads:
   * each block once, which would only push hot blocks out). A miss reads through `prefetcher`
   * (the iterator's readahead, blockPrefetcher.ts) when given.
   */
  loadDataBlock(offset: number, size: number, fillCache?: boolean, prefetcher?: BlockPrefetcher): BlockCacheHandle;
}

export interface TableIteratorOptions {
  lowerBound?: Buffer;
  upperBound?: Buffer;
  /** Insert blocks read from the file into the block cache (default true). */
  fillCache?: boolean;
}

/** Per-block knowledge of a bound: not yet compared, whole block inside, or per-key checks needed. */
enum BoundState {
  Unknown = 0,
  Inside = 1,
  PerKey = 2,
}

export class TableIterator implements InternalIterator {
  private readonly source: TableBlockSource;
  private readonly indexKeyIsUserKey: boolean;
  private readonly index: IndexIterator;
  private readonly data: BlockIterator;
  private readonly fillCache: boolean;
  /** Readahead for this iterator's sequential block reads (blockPrefetcher.ts); released by close(). */
  private readonly prefetcher = new BlockPrefetcher();
  /** Pin on the current data block, or null when none is loaded. */
  private pinned: BlockCacheHandle | null = null;
  /** File offset of the loaded data block, or -1. */
  private loadedBlockOffset = -1;
  /** Size of that block's contents (without its trailer), from its index entry. */
  private loadedBlockSize = 0;
  private isValid = false;
  /** The last seekGE found nothing: a trySeekUsingNext seek cannot find anything either. */
  private exhaustedBySeekGE = false;
  private closed = false;

  private lowerBound: Buffer | null = null;
  private upperBound: Buffer | null = null;
  /** Smallest internal keys with the bound user keys (bound ‖ max seq ‖ seek type). */
  private lowerSeekKey: Buffer | null = null;
  private upperSeekKey: Buffer | null = null;
  private lowerState = BoundState.Unknown;
  private upperState = BoundState.Unknown;
  /** indexTarget's last answer and the target it was made from. */
  private lastIndexTargetOf: Buffer | null = null;
  private lastIndexTarget: Buffer = Buffer.alloc(0);

  constructor(source: TableBlockSource, options?: TableIteratorOptions) {
    this.source = source;
    this.indexKeyIsUserKey = source.indexKeyIsUserKey;
    this.index = source.newIndexIterator();
    this.data = source.newDataBlockIterator();
    this.fillCache = options?.fillCache ?? true;
    this.setBounds(options?.lowerBound, options?.upperBound);
  }

  /** Replaces the bounds (user keys; upper exclusive). Re-position the iterator afterwards. */
  setBounds(lowerBound?: Buffer, upperBound?: Buffer): void {
    this.lowerBound = lowerBound ?? null;
    this.upperBound = upperBound ?? null;
    this.lowerSeekKey = lowerBound === undefined ? null : makeInternalKey(lowerBound, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    this.upperSeekKey = upperBound === undefined ? null : makeInternalKey(upperBound, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    this.lowerState = BoundState.Unknown;
    this.upperState = BoundState.Unknown;
    this.exhaustedBySeekGE = false;
  }

  valid(): boolean {
    return this.isValid;
  }

  key(): Buffer {
    return this.data.key();
  }

  /**
   * Approximate file offset of the current entry: its block's offset plus the block's stored
   * size times the entry's fraction of the block's (decompressed) entry bytes; -1 when not
   * positioned. Entries of similar size make this proportional to the entry's ordinal, which is
   * what callers use it for (the conflict scan's per-key cost estimates); reads nothing.
   */
  approximateFileOffset(): number {
    if (!this.isValid) return -1;
    return this.loadedBlockOffset + this.loadedBlockSize * this.data.entryFraction;
  }

  value(): Buffer {
    return this.data.value();
  }

  first(): void {
    this.checkOpen();
    perf.seeks++;
    this.exhaustedBySeekGE = false;
    if (this.lowerSeekKey !== null) {
      this.seekGEFull(this.lowerSeekKey);
      return;
    }
    this.index.first();
    if (!this.enterIndexedBlock()) return;
    this.data.first();
    this.settleForward();
  }

  last(): void {
    this.checkOpen();
    perf.seeks++;
    this.exhaustedBySeekGE = false;
    if (this.upperSeekKey !== null) {
      this.seekLTInternal(this.upperSeekKey);
      return;
    }
    this.index.last();
    if (!this.enterIndexedBlock()) return;
    this.data.last();
    this.settleBackward();
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    this.checkOpen();
    perf.seeks++;
    if (opts !== undefined && opts.trySeekUsingNext === true) {
      if (this.isValid) {
        // The answer is the current entry or a later one. No lower-bound clamp: the current
        // entry is within the bounds, so a target below the bound is below it too and stays.
        if (this.targetInCurrentBlock(target)) {
          // In this block, or (past its last key) the first key of the next one.
          this.data.seekGE(target, opts);
          this.settleForward();
        } else {
          // A later block: the index searches forward from the current block's entry.
          const nextBlockOffset = this.loadedBlockOffset + this.loadedBlockSize + BLOCK_TRAILER_BYTES;
          this.index.seekGE(this.indexTarget(target), opts);
          // The very next block (data blocks lie end to end): the target is past the previous
          // block's last key, so on interleaved data the answer is at or near this block's start,
          // and it is searched forward from its first entry, without reading the restart array at
          // the block's end. A target further away lands anywhere in its block: the block's own
          // binary search serves that better than steps from its start.
          const adjacent = this.index.valid() && this.index.handleOffset === nextBlockOffset;
          this.seekInIndexedBlock(target, adjacent ? opts : undefined);
        }
        this.exhaustedBySeekGE = !this.isValid;
        return;
      }
      if (this.exhaustedBySeekGE) return;
    }
    let t = target;
    if (this.lowerBound !== null && this.compareUserKeyToBound(t, this.lowerBound) < 0) t = this.lowerSeekKey as Buffer;
    this.seekGEFull(t);
  }

  seekLT(target: Buffer): void {
    this.checkOpen();
    perf.seeks++;
    this.exhaustedBySeekGE = false;
    let t = target;
    if (this.upperBound !== null && this.compareUserKeyToBound(t, this.upperBound) >= 0) t = this.upperSeekKey as Buffer;
    this.seekLTInternal(t);
  }

  next(): void {
    assert(this.isValid, 'TableIterator.next() on an invalid iterator');
    perf.nexts++;
    this.exhaustedBySeekGE = false;
    this.data.next();
    this.settleForward();
  }

  prev(): void {
    assert(this.isValid, 'TableIterator.prev() on an invalid iterator');
    perf.prevs++;
    this.exhaustedBySeekGE = false;
    this.data.prev();
    this.settleBackward();
  }

  /** Drops the position and releases the pinned blocks; the iterator stays usable. */
  unpin(): void {
    this.isValid = false;
    this.exhaustedBySeekGE = false;
    this.releaseBlock();
    this.index.unpin?.();
  }

  close(): void {
    if (this.closed) return;
    this.unpin();
    this.prefetcher.release();
    this.index.close();
    this.data.close();
    this.closed = true;
  }

  // --- internals ---------------------------------------------------------------------------

  private checkOpen(): void {
    assert(!this.closed, 'TableIterator used after close()');
  }

  private seekGEFull(t: Buffer): void {
    this.index.seekGE(this.indexTarget(t));
    this.seekInIndexedBlock(t);
  }

  /**
   * The index stands on (or past) the block that may hold `t`: search it, then move forward.
   * `forwardFromFirst` (trySeekUsingNext options), when every key before that block is known to
   * be < t: search it forward from its first entry instead of from scratch.
   */
  private seekInIndexedBlock(t: Buffer, forwardFromFirst?: SeekOptions): void {
    if (this.enterIndexedBlock()) {
      if (forwardFromFirst !== undefined) this.data.first();
      this.data.seekGE(t, forwardFromFirst);
      this.settleForward();
    }
    this.exhaustedBySeekGE = !this.isValid;
  }

  private seekLTInternal(t: Buffer): void {
    this.index.seekGE(this.indexTarget(t));
    if (!this.index.valid()) {
      // Every separator, hence every key, is < t: the answer is the table's last key.
      this.index.last();
      if (!this.enterIndexedBlock()) return;
      this.data.last();
    } else {
      // Later blocks start above this separator (>= t); earlier blocks are wholly < t.
      if (!this.enterIndexedBlock()) return;
      this.data.seekLT(t);
    }
    this.settleBackward();
  }

  /**
   * The index key to seek for internal key `t`. A user-key index takes a view of t's user key,
   * kept while callers pass the same target buffer (seek keys are reused buffers whose contents
   * change between seeks: a view of the same bytes stays right), so a seek allocates nothing.
   */
  private indexTarget(t: Buffer): Buffer {
    if (!this.indexKeyIsUserKey) return t;
    if (t !== this.lastIndexTargetOf) {
      this.lastIndexTargetOf = t;
      this.lastIndexTarget = t.subarray(0, t.length - TRAILER_BYTES);
    }
    return this.lastIndexTarget;
  }

  /** True when `t` <= the current block's separator, i.e. its answer is in this block or later. */
  private targetInCurrentBlock(t: Buffer): boolean {
    const sep = this.index.keyBytes();
    const sepLength = this.index.keyBytesLength();
    perf.keyComparisons++;
    if (this.indexKeyIsUserKey) return compareByteRanges(t, 0, t.length - TRAILER_BYTES, sep, 0, sepLength) <= 0;
    return compareInternalKeyRanges(t, 0, t.length, sep, 0, sepLength) <= 0;
  }

  /** Loads the block the index stands on; invalidates and returns false if the index is done. */
  private enterIndexedBlock(): boolean {
    if (!this.index.valid()) {
      this.isValid = false;
      this.releaseBlock();
      return false;
    }
    const offset = this.index.handleOffset;
    if (offset !== this.loadedBlockOffset || this.pinned === null) {
      this.releaseBlock();
      this.pinned = this.source.loadDataBlock(offset, this.index.handleSize, this.fillCache, this.prefetcher);
      this.loadedBlockOffset = offset;
      this.loadedBlockSize = this.index.handleSize;
      this.data.reset(this.pinned.block);
    }
    this.lowerState = BoundState.Unknown;
    this.upperState = BoundState.Unknown;
    return true;
  }

  private releaseBlock(): void {
    if (this.pinned !== null) {
      this.pinned.release();
      this.pinned = null;
    }
    this.loadedBlockOffset = -1;
  }

  /** After a forward move of the data iterator: skip exhausted/empty blocks, check the upper bound. */
  private settleForward(): void {
    while (!this.data.valid()) {
      this.index.next();
      if (!this.enterIndexedBlock()) return;
      this.data.first();
    }
    this.isValid = this.upperBound === null || this.withinUpperBound();
    if (!this.isValid) this.releaseBlock();
  }

  /** After a backward move: skip exhausted/empty blocks backwards, check the lower bound. */
  private settleBackward(): void {
    while (!this.data.valid()) {
      this.index.prev();
      if (!this.enterIndexedBlock()) return;
      this.data.last();
    }
    this.isValid = this.lowerBound === null || this.withinLowerBound();
    if (!this.isValid) this.releaseBlock();
  }

  private withinUpperBound(): boolean {
    const upper = this.upperBound as Buffer;
    if (this.upperState === BoundState.Unknown) {
      // The separator is >= every key of the block: if it is below the bound, so is the block.
      const sep = this.index.keyBytes();
      const sepUserKeyLength = this.index.keyBytesLength() - (this.indexKeyIsUserKey ? 0 : TRAILER_BYTES);
      perf.keyComparisons++;
      perf.boundComparisons++;
      this.upperState = compareByteRanges(sep, 0, sepUserKeyLength, upper, 0, upper.length) < 0 ? BoundState.Inside : BoundState.PerKey;
    }
    if (this.upperState === BoundState.Inside) return true;
    perf.keyComparisons++;
    perf.boundComparisons++;
    return compareByteRanges(this.data.keyBytes(), 0, this.data.keyBytesLength() - TRAILER_BYTES, upper, 0, upper.length) < 0;
  }

  private withinLowerBound(): boolean {
    const lower = this.lowerBound as Buffer;
    if (this.lowerState === BoundState.Unknown) {
      // The block's first key is <= every key of the block: if it is at or above the bound, so is the block.
      const block = this.data.currentBlock();
      assert(block !== null, 'a positioned data iterator has a block');
      const p = block.restartKeyOffset(0, true);
      perf.keyComparisons++;
      perf.boundComparisons++;
      this.lowerState =
        compareByteRanges(block.data, p, block.restartKeyLength - TRAILER_BYTES, lower, 0, lower.length) >= 0
          ? BoundState.Inside
          : BoundState.PerKey;
    }
    if (this.lowerState === BoundState.Inside) return true;
    perf.keyComparisons++;
    perf.boundComparisons++;
    return compareByteRanges(this.data.keyBytes(), 0, this.data.keyBytesLength() - TRAILER_BYTES, lower, 0, lower.length) >= 0;
  }

  /** Compares the user key of internal key `t` with a bound; counts a bound comparison. */
  private compareUserKeyToBound(t: Buffer, bound: Buffer): number {
    perf.keyComparisons++;
    perf.boundComparisons++;
    return compareByteRanges(t, 0, t.length - TRAILER_BYTES, bound, 0, bound.length);
  }
}
