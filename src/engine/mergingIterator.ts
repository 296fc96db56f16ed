/**
 * The merging iterator: one InternalIterator over many (memtables, L0 files, levels), yielding
 * the union of their entries in internal-key order, forward or backward.
 *
 * A binary heap of child indices is ordered by each child's current key: a min-heap moving
 * forward, a max-heap moving backward. `next` advances the top child and sifts it down, so a
 * step costs O(log k) comparisons for k live children and none at all when only one child has
 * entries left. Children's current keys are cached per child (views stay valid until the child
 * moves, per the InternalIterator contract) so a comparison does not call into the children.
 *
 * Direction switches (LevelDB's scheme): to go backward from key K, every other child seeks to
 * its last key < K and the current child steps back; to go forward again, every other child
 * seeks to its first key >= K (stepping past K itself) and the current child steps forward.
 * Internal keys are unique across children (sequence numbers are), which this relies on.
 *
 * trySeekUsingNext (src/base/iterator.ts's contract: since its last seekGE the iterator moved only
 * forward, by seekGE and next, and not past the first entry >= target): then no child has moved
 * past its own first entry >= target either, since every entry a child was moved past was the
 * merged position at the time, which was < target. So every child may take the flag, `next`
 * between the seeks included: the children in the heap seek with it (one at or past the target
 * stays where it is, at the cost of its own comparison; one behind searches forward from where
 * it stands), children exhausted moving forward stay exhausted without being asked, and the heap
 * is rebuilt over the live ones (O(k)), as Pebble's merging iterator does. Any backward move,
 * first or last revokes the flag until the next full seekGE.
 */
import { CoveredRangeSkipper, InternalIterator, SeekOptions } from '../base/iterator';
import { compareToBound } from './boundedIterator';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, ValueType } from '../base/internalKey';
import { compareInternal } from '../base/keyCompare';
import { perf } from '../base/perfContext';
import { assert } from '../util/errors';

const enum Direction {
  Forward,
  Reverse,
}

export class MergingIterator implements InternalIterator, CoveredRangeSkipper {
  private readonly children: InternalIterator[];
  /** Current key of each child while it is in the heap. */
  private readonly keys: Array<Buffer | null>;
  private readonly heap: Int32Array;
  private heapSize = 0;
  private direction = Direction.Forward;
  /** Since the last seekGE, only seekGE and next have moved this iterator. */
  private forwardOnlySinceSeekGE = false;
  private closed = false;

  constructor(children: InternalIterator[]) {
    this.children = children;
    this.keys = new Array<Buffer | null>(children.length).fill(null);
    this.heap = new Int32Array(Math.max(1, children.length));
  }

  valid(): boolean {
    return this.heapSize > 0;
  }

  key(): Buffer {
    return this.keys[this.heap[0]] as Buffer;
  }

  value(): Buffer {
    return this.children[this.heap[0]].value();
  }

  first(): void {
    for (const c of this.children) c.first();
    this.afterRepositionAll(Direction.Forward);
  }

  last(): void {
    for (const c of this.children) c.last();
    this.afterRepositionAll(Direction.Reverse);
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    if (opts !== undefined && opts.trySeekUsingNext === true && this.forwardOnlySinceSeekGE) {
      this.seekGEForward(target, opts);
      return;
    }
    const children = this.children;
    for (let i = 0; i < children.length; i++) children[i].seekGE(target);
    this.direction = Direction.Forward;
    this.rebuildHeap();
    this.forwardOnlySinceSeekGE = true;
  }

  seekLT(target: Buffer): void {
    for (const c of this.children) c.seekLT(target);
    this.afterRepositionAll(Direction.Reverse);
  }

  next(): void {
    assert(this.heapSize > 0, 'MergingIterator.next() on an invalid iterator');
    if (this.direction !== Direction.Forward) this.switchToForward();
    else this.advanceTop();
  }

  prev(): void {
    assert(this.heapSize > 0, 'MergingIterator.prev() on an invalid iterator');
    this.forwardOnlySinceSeekGE = false;
    if (this.direction !== Direction.Reverse) this.switchToReverse();
    else this.advanceTop();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.children) c.close();
    this.heapSize = 0;
  }

  /**
   * CoveredRangeSkipper: range-deleted keys skipped a child at a time rather than an entry at a
   * time (RocksDB 7.7+ and Pebble skip covered spans in their merging iterators the same way).
   * The caller (DbIterator) stands on a key inside a span [.., endUserKey) that one visible range
   * tombstone of sequence number `coveringSeq` covers whole. Each child that is still below
   * `endUserKey` and whose largestSeqBefore(endUserKey) is below `coveringSeq` holds nothing
   * there but deleted entries and older tombstones (which delete only entries that this one
   * deletes too), so it seeks to `endUserKey`. Children that cannot tell (memtables) or hold
   * something newer keep their place. Forward only; revokes trySeekUsingNext until the next full
   * seekGE, because a skipped child may now stand past an (invisible) first entry >= a later
   * target.
   */
  skipCoveredForward(endUserKey: Buffer, coveringSeq: number): boolean {
    if (this.direction !== Direction.Forward || this.heapSize === 0) return false;
    let endSeekKey: Buffer | null = null;
    const heap = this.heap;
    for (let h = 0; h < this.heapSize; h++) {
      const i = heap[h];
      const child = this.children[i];
      if (child.largestSeqBefore === undefined) continue;
      if (compareToBound(this.keys[i] as Buffer, endUserKey) >= 0) continue;
      if (child.largestSeqBefore(endUserKey) >= coveringSeq) continue;
      endSeekKey ??= makeInternalKey(endUserKey, MAX_SEQUENCE_NUMBER, ValueType.Seek);
      child.seekGE(endSeekKey);
      perf.rangeDelSkips++;
    }
    if (endSeekKey === null) return false;
    this.forwardOnlySinceSeekGE = false;
    this.rebuildHeap();
    return true;
  }

  /** skipCoveredForward's mirror for backward iteration (CoveredRangeSkipper). */
  skipCoveredBackward(startUserKey: Buffer, coveringSeq: number): boolean {
    if (this.direction !== Direction.Reverse || this.heapSize === 0) return false;
    let startSeekKey: Buffer | null = null;
    const heap = this.heap;
    for (let h = 0; h < this.heapSize; h++) {
      const i = heap[h];
      const child = this.children[i];
      if (child.largestSeqFrom === undefined) continue;
      if (compareToBound(this.keys[i] as Buffer, startUserKey) < 0) continue;
      if (child.largestSeqFrom(startUserKey) >= coveringSeq) continue;
      // The first internal key of startUserKey: seekLT lands on the last entry below it.
      startSeekKey ??= makeInternalKey(startUserKey, MAX_SEQUENCE_NUMBER, ValueType.Seek);
      child.seekLT(startSeekKey);
      perf.rangeDelSkips++;
    }
    if (startSeekKey === null) return false;
    this.forwardOnlySinceSeekGE = false;
    this.rebuildHeap();
    return true;
  }

  // --- internals -------------------------------------------------------------------------------

  /** seekGE under trySeekUsingNext (see the module comment). */
  private seekGEForward(target: Buffer, opts: SeekOptions): void {
    const heap = this.heap;
    const n = this.heapSize;
    let live = 0;
    for (let h = 0; h < n; h++) {
      const i = heap[h];
      const child = this.children[i];
      child.seekGE(target, opts);
      if (child.valid()) {
        this.keys[i] = child.key();
        heap[live++] = i;
      } else {
        this.keys[i] = null;
      }
    }
    this.heapSize = live;
    for (let h = (live >>> 1) - 1; h >= 0; h--) this.siftDown(h);
  }

  private afterRepositionAll(direction: Direction): void {
    this.forwardOnlySinceSeekGE = false;
    this.direction = direction;
    this.rebuildHeap();
  }

  /** Moves the top child one step in the current direction and restores the heap. */
  private advanceTop(): void {
    const top = this.heap[0];
    const child = this.children[top];
    if (this.direction === Direction.Forward) child.next();
    else child.prev();
    if (child.valid()) {
      this.keys[top] = child.key();
      this.siftDown(0);
    } else {
      this.keys[top] = null;
      this.heapSize--;
      if (this.heapSize > 0) {
        this.heap[0] = this.heap[this.heapSize];
        this.siftDown(0);
      }
    }
  }

  private switchToForward(): void {
    const current = this.heap[0];
    const k = Buffer.from(this.keys[current] as Buffer);
    for (let i = 0; i < this.children.length; i++) {
      if (i === current) continue;
      const c = this.children[i];
      c.seekGE(k);
      if (c.valid()) {
        perf.keyComparisons++;
        if (compareInternal(c.key(), k) === 0) c.next();
      }
    }
    this.children[current].next();
    this.forwardOnlySinceSeekGE = false;
    this.direction = Direction.Forward;
    this.rebuildHeap();
  }

  private switchToReverse(): void {
    const current = this.heap[0];
    const k = Buffer.from(this.keys[current] as Buffer);
    for (let i = 0; i < this.children.length; i++) {
      if (i !== current) this.children[i].seekLT(k);
    }
    this.children[current].prev();
    this.forwardOnlySinceSeekGE = false;
    this.direction = Direction.Reverse;
    this.rebuildHeap();
  }

  private rebuildHeap(): void {
    let n = 0;
    for (let i = 0; i < this.children.length; i++) {
      const c = this.children[i];
      if (c.valid()) {
        this.keys[i] = c.key();
        this.heap[n++] = i;
      } else {
        this.keys[i] = null;
      }
    }
    this.heapSize = n;
    for (let i = (n >>> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** True when child a's key should come out of the heap before child b's. */
  private before(a: number, b: number): boolean {
    perf.keyComparisons++;
    const c = compareInternal(this.keys[a] as Buffer, this.keys[b] as Buffer);
    if (c === 0) return a < b;
    return this.direction === Direction.Forward ? c < 0 : c > 0;
  }

  private siftDown(pos: number): void {
    const heap = this.heap;
    const n = this.heapSize;
    const item = heap[pos];
    for (;;) {
      const left = 2 * pos + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && this.before(heap[right], heap[left]) ? right : left;
      if (!this.before(heap[child], item)) break;
      heap[pos] = heap[child];
      pos = child;
    }
    heap[pos] = item;
  }
}
