/**
 * The memtable: the in-memory write buffer holding the newest writes in internal-key order.
 *
 * Contract:
 * - Holds point entries (puts and deletes) in one skiplist and range deletions in another,
 *   the latter keyed by (start, seq, RangeDeletion) with the exclusive end key as value, like an
 *   SST's range-deletion block. Applying range deletions is the read path's job (the engine's
 *   get and iterators, through `fragmentedRangeTombstones()`), so `get` here answers for point
 *   entries only.
 * - `get(userKey, readSeq)` finds the newest point entry for the key with seq <= readSeq and
 *   reports its sequence number, which the caller compares with covering range tombstones.
 * - `fragmentedRangeTombstones()` is the tombstones fragmented for search (src/base/fragmenter.ts),
 *   built on first use and rebuilt only when tombstones were added since (the active memtable
 *   takes more while readers use it; a reader needs only those at or below its sequence, which
 *   any later list still holds).
 * - Iterators see entries added after they were created (the skiplist never moves or frees an
 *   entry); readers filter by sequence number, so that is harmless.
 * - `approximateMemoryUsageBytes` counts the arena bytes in use; the engine compares it with
 *   writeBufferSizeBytes to decide when the memtable is full.
 * - `get` asks a Bloom filter of the point entries' user keys first (memtableFilter.ts; on
 *   unless `filter: false`), so a lookup passes a memtable without its key for one cache line
 *   instead of a skiplist search.
 */
import { InternalIterator, SeekOptions, TRY_SEEK_USING_NEXT_STEPS } from '../../base/iterator';
import { INITIAL_ARENA_BYTES, SkipList } from './skiplist';
import { KeyHash, MemtableFilter } from './memtableFilter';
import { SeekKeyBuilder, TRAILER_BYTES, ValueType, sequenceOf } from '../../base/internalKey';
import { compareByteRanges } from '../../base/keyCompare';
import { assert, assertionFailed } from '../../util/errors';
import { FragmentedTombstoneList, fragmentTombstones } from '../../base/fragmenter';

export enum LookupResult {
  NotFound = 0,
  Found = 1,
  Deleted = 2,
}

/** Where a successful lookup leaves the value (a view into the memtable's arena) and its sequence. */
export interface LookupValue {
  value: Buffer | null;
  /** Sequence number of the entry found (Found or Deleted). */
  seq: number;
}

export interface RangeTombstone {
  start: Buffer;
  /** Exclusive. */
  end: Buffer;
  seq: number;
}

export interface MemtableOptions {
  /** Initial arena size (it doubles as needed); the engine sizes it from writeBufferSizeBytes. */
  initialArenaBytes?: number;
  /** Keep a Bloom filter of the point entries' user keys (memtableFilter.ts); default true. */
  filter?: boolean;
}

/** Seek keys for lookups, built without allocating (one builder: JS runs one lookup at a time). */
const seekKeys = new SeekKeyBuilder();

function seekKey(userKey: Uint8Array, seq: number): Buffer {
  return seekKeys.build(userKey, seq);
}

/** get()'s key hash when its caller brings none (one lookup at a time, as above). */
const scratchKeyHash = new KeyHash();

export class Memtable {
  private readonly points: SkipList;
  /** Every point entry's user key, so that a lookup skips a memtable without its key; null when off. */
  private readonly filter: MemtableFilter | null;
  /** Created on the first range deletion: most memtables never see one. */
  private rangeDeletionList: SkipList | null = null;
  private smallestSeqSeen = Number.MAX_SAFE_INTEGER;
  private largestSeqSeen = 0;
  /** Fragments of the range tombstones, and how many tombstones they were built from. */
  private fragments: FragmentedTombstoneList = FragmentedTombstoneList.EMPTY;
  private fragmentsBuiltFrom = 0;

  constructor(opts: MemtableOptions = {}) {
    this.points = new SkipList({ initialArenaBytes: opts.initialArenaBytes });
    // Sized from the first arena: the engine sizes that from writeBufferSizeBytes.
    this.filter = opts.filter === false ? null : new MemtableFilter(opts.initialArenaBytes ?? INITIAL_ARENA_BYTES);
  }

  /** The range-deletion list; rare, so it gets a small arena. */
  private get rangeDeletions(): SkipList {
    if (this.rangeDeletionList === null) this.rangeDeletionList = new SkipList({ initialArenaBytes: 4096 });
    return this.rangeDeletionList;
  }

  /** Adds one entry. For RangeDeletion, `userKey` is the start and `value` the exclusive end. */
  add(seq: number, type: ValueType, userKey: Uint8Array, value: Uint8Array): void {
    if (type === ValueType.RangeDeletion) {
      this.rangeDeletions.insert(userKey, seq, type, value);
    } else {
      if (type !== ValueType.Value && type !== ValueType.Deletion) assertionFailed(`memtable cannot hold value type ${type}`);
      this.points.insert(userKey, seq, type, value);
      if (this.filter !== null) this.filter.add(userKey);
    }
    if (seq < this.smallestSeqSeen) this.smallestSeqSeen = seq;
    if (seq > this.largestSeqSeen) this.largestSeqSeen = seq;
  }

  /**
   * Looks up the newest point entry of `userKey` visible at `readSeq`. On Found, `out.value` is a
   * view into the arena, valid as long as the memtable is. `keyHash`: the key's filter hash, when
   * the caller looks the key up in several memtables and hashed it once for all of them.
   */
  get(userKey: Buffer, readSeq: number, out: LookupValue, keyHash?: KeyHash): LookupResult {
    if (this.filter !== null && !this.filter.mayContain(keyHash ?? scratchKeyHash.of(userKey))) return LookupResult.NotFound;
    const target = seekKey(userKey, readSeq);
    const node = this.points.seekGE(target);
    if (node === 0) return LookupResult.NotFound;
    const key = this.points.key(node);
    if (compareByteRanges(key, 0, key.length - TRAILER_BYTES, userKey, 0, userKey.length) !== 0) return LookupResult.NotFound;
    out.seq = sequenceOf(key);
    if (key[key.length - TRAILER_BYTES] === ValueType.Deletion) {
      out.value = null;
      return LookupResult.Deleted;
    }
    out.value = this.points.value(node);
    return LookupResult.Found;
  }

  newIterator(): InternalIterator {
    return new MemtableIterator(this.points);
  }

  /** Iterator over range tombstones: key = (start, seq, RangeDeletion), value = end. */
  newRangeTombstoneIterator(): InternalIterator {
    return new MemtableIterator(this.rangeDeletions);
  }

  /** All range tombstones, ordered by (start, seq descending); copies. */
  rangeTombstones(): RangeTombstone[] {
    const out: RangeTombstone[] = [];
    if (this.rangeDeletionList === null) return out;
    for (let n = this.rangeDeletions.firstNode(); n !== 0; n = this.rangeDeletions.nextNode(n)) {
      const k = this.rangeDeletions.key(n);
      out.push({
        start: Buffer.from(k.subarray(0, k.length - TRAILER_BYTES)),
        end: Buffer.from(this.rangeDeletions.value(n)),
        seq: sequenceOf(k),
      });
    }
    return out;
  }

  /** The range tombstones fragmented for search; the shared empty list while there are none. */
  fragmentedRangeTombstones(): FragmentedTombstoneList {
    const count = this.rangeTombstoneCount;
    if (count !== this.fragmentsBuiltFrom) {
      this.fragments = fragmentTombstones(this.rangeTombstones());
      this.fragmentsBuiltFrom = count;
    }
    return this.fragments;
  }

  get pointEntryCount(): number {
    return this.points.count;
  }

  get rangeTombstoneCount(): number {
    return this.rangeDeletionList === null ? 0 : this.rangeDeletionList.count;
  }

  get isEmpty(): boolean {
    return this.points.count === 0 && this.rangeTombstoneCount === 0;
  }

  /** Smallest and largest sequence numbers added (MAX_SAFE_INTEGER / 0 while empty). */
  get smallestSeq(): number {
    return this.smallestSeqSeen;
  }

  get largestSeq(): number {
    return this.largestSeqSeen;
  }

  get approximateMemoryUsageBytes(): number {
    return this.points.memoryUsageBytes + (this.rangeDeletionList === null ? 0 : this.rangeDeletionList.memoryUsageBytes);
  }
}

/**
 * An InternalIterator over one skiplist. `prev` searches from the top (the skiplist has no back
 * links), like LevelDB's; reverse scans are rarer than forward ones and stay O(log n) per step.
 */
export class MemtableIterator implements InternalIterator {
  private node = 0;
  private keyView: Buffer | null = null;
  private closed = false;

  constructor(private readonly list: SkipList) {}

  valid(): boolean {
    return this.node !== 0;
  }

  key(): Buffer {
    if (this.keyView === null) this.keyView = this.list.key(this.node);
    return this.keyView;
  }

  value(): Buffer {
    return this.list.value(this.node);
  }

  first(): void {
    this.moveTo(this.list.firstNode());
  }

  last(): void {
    this.moveTo(this.list.lastNode());
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    if (opts !== undefined && opts.trySeekUsingNext === true) {
      // The caller promises that every entry before the current one is < target (src/base/iterator.ts).
      // An exhausted iterator stays exhausted.
      let n = this.node;
      if (n === 0) return;
      for (let step = 0; step <= TRY_SEEK_USING_NEXT_STEPS; step++) {
        if (this.list.compareNode(n, target, 0, target.length) >= 0) {
          this.moveTo(n);
          return;
        }
        n = this.list.nextNode(n);
        if (n === 0) {
          this.moveTo(0);
          return;
        }
      }
    }
    this.moveTo(this.list.seekGE(target));
  }

  seekLT(target: Buffer): void {
    this.moveTo(this.list.seekLT(target));
  }

  next(): void {
    assert(this.node !== 0, 'next() on an invalid memtable iterator');
    this.moveTo(this.list.nextNode(this.node));
  }

  prev(): void {
    assert(this.node !== 0, 'prev() on an invalid memtable iterator');
    this.moveTo(this.list.prevNode(this.node));
  }

  close(): void {
    assert(!this.closed, 'memtable iterator closed twice');
    this.closed = true;
    this.node = 0;
  }

  private moveTo(node: number): void {
    this.node = node;
    this.keyView = null;
  }
}
