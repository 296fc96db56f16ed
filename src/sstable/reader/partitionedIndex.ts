/**
 * Partitioned (two-level) index and filter readers, for tables written with
 * index_type = kTwoLevelIndexSearch and partition_filters.
 *
 * On disk: the footer's index handle points at the top-level index, an ordinary index block
 * whose entries are `last separator of partition p → BlockHandle of partition p`. Each partition
 * is an ordinary index block (`separator → data block handle`). Keys and values of both levels
 * use the table's index encodings (user or internal keys; plain or delta-encoded handles).
 * A partitioned filter works the same way: the metaindex's `partitionedfilter.*` entry points at
 * a filter-partition index (`key → filter partition handle`) and each partition is a complete
 * full-filter block over its own keys.
 *
 * Contract:
 * - `PartitionedIndexIterator` presents the partitions' entries as one index: the same
 *   `IndexIterator` surface as a single index block's BlockIterator (key, handleOffset,
 *   handleSize, seeks with trySeekUsingNext), so the table iterator cannot tell them apart.
 *   Partitions come from a loader (the reader's cache-or-file path), pinned while positioned.
 * - `PartitionedFilter.keyMayMatch` finds the partition whose key is the first >= the lookup
 *   key (the last partition when the key is beyond all of them, as RocksDB does) and asks it.
 *   Loaded partitions are kept for the reader's lifetime (their total size is the filter size).
 */
import { SeekOptions } from '../../base/iterator';
import { BlockIterator } from './block';
import { BlockCacheHandle } from './blockCache';
import { FilterReader } from './filterReader';
import { IndexIterator } from './tableIterator';

/** Loads an index partition by handle, pinned (the reader's cache-or-file path). */
export type PartitionLoader = (offset: number, size: number) => BlockCacheHandle;

export class PartitionedIndexIterator implements IndexIterator {
  private readonly top: BlockIterator;
  private readonly partition: BlockIterator;
  private readonly load: PartitionLoader;
  private pinned: BlockCacheHandle | null = null;
  private loadedOffset = -1;
  private isValid = false;

  /** `top` iterates the top-level block; `partition` is an unpositioned iterator with the same options. */
  constructor(top: BlockIterator, partition: BlockIterator, load: PartitionLoader) {
    this.top = top;
    this.partition = partition;
    this.load = load;
  }

  get handleOffset(): number {
    return this.partition.handleOffset;
  }

  get handleSize(): number {
    return this.partition.handleSize;
  }

  valid(): boolean {
    return this.isValid;
  }

  key(): Buffer {
    return this.partition.key();
  }

  keyBytes(): Buffer {
    return this.partition.keyBytes();
  }

  keyBytesLength(): number {
    return this.partition.keyBytesLength();
  }

  first(): void {
    this.top.first();
    if (this.enterPartition()) this.partition.first();
    this.settleForward();
  }

  last(): void {
    this.top.last();
    if (this.enterPartition()) this.partition.last();
    this.settleBackward();
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    // The top-level key of a partition is its last separator: a target at or below it is
    // answered inside this partition (or, past its last entry, by the next one).
    if (opts?.trySeekUsingNext && this.isValid && this.top.compareKeyTo(target) >= 0) {
      this.partition.seekGE(target, opts);
    } else {
      this.top.seekGE(target, opts?.trySeekUsingNext && this.isValid ? opts : undefined);
      if (this.enterPartition()) this.partition.seekGE(target);
    }
    this.settleForward();
  }

  /** Not needed by the table iterator (it seeks the index with seekGE only); kept for the interface. */
  seekLT(target: Buffer): void {
    this.seekGE(target);
    if (this.isValid) this.prev();
    else this.last();
  }

  next(): void {
    this.partition.next();
    this.settleForward();
  }

  prev(): void {
    this.partition.prev();
    this.settleBackward();
  }

  unpin(): void {
    this.release();
    this.isValid = false;
  }

  close(): void {
    this.release();
    this.isValid = false;
    this.top.close();
    this.partition.close();
  }

  private enterPartition(): boolean {
    if (!this.top.valid()) {
      this.isValid = false;
      this.release();
      return false;
    }
    const offset = this.top.handleOffset;
    if (offset !== this.loadedOffset || this.pinned === null) {
      this.release();
      this.pinned = this.load(offset, this.top.handleSize);
      this.loadedOffset = offset;
      this.partition.reset(this.pinned.block);
    }
    return true;
  }

  private release(): void {
    if (this.pinned !== null) {
      this.pinned.release();
      this.pinned = null;
    }
    this.loadedOffset = -1;
  }

  /** Skips exhausted (or empty) partitions forward. */
  private settleForward(): void {
    while (this.top.valid() && !this.partition.valid()) {
      this.top.next();
      if (!this.enterPartition()) return;
      this.partition.first();
    }
    this.isValid = this.top.valid() && this.partition.valid();
  }

  private settleBackward(): void {
    while (this.top.valid() && !this.partition.valid()) {
      this.top.prev();
      if (!this.enterPartition()) return;
      this.partition.last();
    }
    this.isValid = this.top.valid() && this.partition.valid();
  }
}

/** Reads one filter partition's contents by handle (checksum-verified). */
export type FilterPartitionLoader = (offset: number, size: number) => Buffer;

export class PartitionedFilter {
  private readonly index: BlockIterator;
  private readonly load: FilterPartitionLoader;
  /** Lookup keys are user keys, or internal keys (user key ‖ max seq ‖ seek type) when the index stores those. */
  private readonly toIndexKey: (userKey: Buffer) => Buffer;
  private readonly partitions = new Map<number, FilterReader>();

  constructor(index: BlockIterator, toIndexKey: (userKey: Buffer) => Buffer, load: FilterPartitionLoader) {
    this.index = index;
    this.toIndexKey = toIndexKey;
    this.load = load;
  }

  keyMayMatch(userKey: Buffer): boolean {
    this.index.seekGE(this.toIndexKey(userKey));
    if (!this.index.valid()) {
      // Past every partition key: RocksDB consults the last partition (prefixes may live there).
      this.index.last();
      if (!this.index.valid()) return true;
    }
    const offset = this.index.handleOffset;
    let filter = this.partitions.get(offset);
    if (filter === undefined) {
      filter = FilterReader.fromBlock(this.load(offset, this.index.handleSize));
      this.partitions.set(offset, filter);
    }
    return filter.keyMayMatch(userKey);
  }
}
