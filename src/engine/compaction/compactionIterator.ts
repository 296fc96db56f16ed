/**
 * The compaction iterator: filters the merged input of a flush or compaction (internal-key order:
 * user key ascending, newest version first) down to the entries some reader can still see, and
 * the input's range tombstones down to those that can still delete something.
 *
 * Snapshot stripes. With live snapshots s_0 < s_1 < ... < s_{n-1}, a sequence number q belongs to
 * stripe i = the index of the first snapshot >= q (n: newer than every snapshot, seen only by the
 * latest reads). Two versions in one stripe are seen by exactly the same snapshots, so only the
 * newer one is ever read. Rules, per entry (user key k, sequence q, type):
 *   1. shadowed: an entry of k newer than it lies in the same stripe → drop;
 *   2. covered: the smallest tombstone sequence t > q covering k (t is the one that deletes the
 *      entry for the most readers) lies in q's stripe, i.e. no snapshot in [q, t) can see the
 *      entry without the tombstone → drop;
 *   3. obsolete deletion: a point deletion (or any non-value type) in stripe 0 at the bottommost
 *      level (no file below the output level overlaps the compaction) hides nothing any reader
 *      could find → drop; the older versions it hid fall under rule 1.
 *   Everything else is kept.
 * Tombstones, per fragment (seqs newest first): a sequence is dropped if a newer kept one of the
 * fragment lies in its stripe (it deletes nothing the newer one does not, for the same readers),
 * or, at the bottommost level, if it lies in stripe 0 (rule 2 dropped everything it covers here,
 * and nothing lies below).
 *
 * Costs: one user-key comparison per entry to detect a new user key; stripes by binary search
 * over the snapshots only when there are any; tombstone lookups by a forward cursor over the
 * fragments (one comparison per fragment boundary crossed), nothing without tombstones. No
 * allocation per entry (the previous user key is copied into a reused buffer).
 *
 * Contract: `first()` positions on the first kept entry; `next()` moves to the next; key() and
 * value() are the input's views (valid until the next move). The input must yield each internal
 * key once, in order (asserted per user key). Sequence numbers are never rewritten.
 */
import { InternalIterator } from '../../base/iterator';
import { compareByteRanges } from '../../base/keyCompare';
import { FragmentedTombstoneList } from '../../base/fragmenter';
import { sequenceOf, TRAILER_BYTES, typeOf, ValueType } from '../../base/internalKey';
import { assert } from '../../util/errors';

export interface CompactionIteratorOptions {
  /** Sequence numbers of live snapshots, ascending, no duplicates. */
  snapshots: readonly number[];
  /** The input's range tombstones, fragmented (files' tombstones clipped to their bounds first). */
  tombstones: FragmentedTombstoneList;
  /** No file below the output level overlaps the input: deletions may vanish. */
  bottommost: boolean;
}

export interface CompactionIteratorStats {
  entriesIn: number;
  entriesOut: number;
  droppedShadowed: number;
  droppedCovered: number;
  droppedDeletions: number;
}

/** Index of the first snapshot >= seq, or snapshots.length: the entry's visibility stripe. */
export function stripeOf(snapshots: readonly number[], seq: number): number {
  let lo = 0;
  let hi = snapshots.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (snapshots[mid] < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class CompactionIterator {
  private readonly input: InternalIterator;
  private readonly snapshots: readonly number[];
  private readonly tombstones: FragmentedTombstoneList;
  private readonly bottommost: boolean;
  readonly stats: CompactionIteratorStats = { entriesIn: 0, entriesOut: 0, droppedShadowed: 0, droppedCovered: 0, droppedDeletions: 0 };

  private isValid = false;
  /** User key of the previous input entry, and whether there was one. */
  private prevUserKey: Buffer = Buffer.allocUnsafe(64);
  private prevUserKeyLength = 0;
  private hasPrev = false;
  private prevSeq = 0;
  /** Stripe of the newest entry of the current user key seen so far (-1: none yet). */
  private lastStripe = -1;
  /** Fragment cursor: first fragment whose end is > the current user key (tombstones.count if none). */
  private fragment = 0;
  /** The current user key lies inside `fragment`. */
  private insideFragment = false;

  constructor(input: InternalIterator, opts: CompactionIteratorOptions) {
    for (let i = 1; i < opts.snapshots.length; i++)
      assert(opts.snapshots[i - 1] < opts.snapshots[i], 'snapshots must be ascending and distinct');
    this.input = input;
    this.snapshots = opts.snapshots;
    this.tombstones = opts.tombstones;
    this.bottommost = opts.bottommost;
  }

  valid(): boolean {
    return this.isValid;
  }

  key(): Buffer {
    return this.input.key();
  }

  value(): Buffer {
    return this.input.value();
  }

  first(): void {
    this.input.first();
    this.hasPrev = false;
    this.fragment = 0;
    this.settle();
  }

  next(): void {
    assert(this.isValid, 'CompactionIterator.next() on an invalid iterator');
    this.input.next();
    this.settle();
  }

  /**
   * The tombstones to write: the input's, less the sequences the rules in the module comment drop.
   * Fragments left without a sequence disappear. Allocates; called once per compaction.
   */
  outputTombstones(): FragmentedTombstoneList {
    const t = this.tombstones;
    if (t.count === 0) return t;
    const starts: Buffer[] = [];
    const ends: Buffer[] = [];
    const offsets: number[] = [0];
    const seqs: number[] = [];
    for (let i = 0; i < t.count; i++) {
      let lastStripe = -1;
      const before = seqs.length;
      for (let j = t.seqOffsets[i]; j < t.seqOffsets[i + 1]; j++) {
        const seq = t.seqs[j];
        const stripe = this.stripe(seq);
        if (stripe === lastStripe) continue;
        lastStripe = stripe;
        if (this.bottommost && stripe === 0) continue;
        seqs.push(seq);
      }
      if (seqs.length > before) {
        starts.push(t.starts[i]);
        ends.push(t.ends[i]);
        offsets.push(seqs.length);
      }
    }
    if (starts.length === 0) return FragmentedTombstoneList.EMPTY;
    const out = new FragmentedTombstoneList(starts, ends, Uint32Array.from(offsets), Float64Array.from(seqs));
    out.checkInvariants();
    return out;
  }

  // --- internals -------------------------------------------------------------------------------

  private stripe(seq: number): number {
    return this.snapshots.length === 0 ? 0 : stripeOf(this.snapshots, seq);
  }

  /** Moves forward from the input's position to the first entry to keep. */
  private settle(): void {
    const it = this.input;
    const stats = this.stats;
    for (; it.valid(); it.next()) {
      const ikey = it.key();
      const userKeyLength = ikey.length - TRAILER_BYTES;
      const seq = sequenceOf(ikey);
      stats.entriesIn++;
      const sameUserKey = this.hasPrev && compareByteRanges(ikey, 0, userKeyLength, this.prevUserKey, 0, this.prevUserKeyLength) === 0;
      if (!sameUserKey) {
        this.rememberUserKey(ikey, userKeyLength);
        this.lastStripe = -1;
        if (this.tombstones.count > 0) this.seekFragment(ikey, userKeyLength);
      } else {
        assert(seq < this.prevSeq, 'compaction input yields versions of a user key newest first, each once');
      }
      this.prevSeq = seq;
      const stripe = this.stripe(seq);
      if (stripe === this.lastStripe) {
        stats.droppedShadowed++;
        continue;
      }
      this.lastStripe = stripe;
      if (this.insideFragment && this.coveredInStripe(seq, stripe)) {
        stats.droppedCovered++;
        continue;
      }
      if (this.bottommost && stripe === 0 && typeOf(ikey) !== ValueType.Value) {
        stats.droppedDeletions++;
        continue;
      }
      stats.entriesOut++;
      this.isValid = true;
      return;
    }
    this.isValid = false;
  }

  private rememberUserKey(ikey: Buffer, userKeyLength: number): void {
    if (this.prevUserKey.length < userKeyLength)
      this.prevUserKey = Buffer.allocUnsafe(Math.max(userKeyLength, 2 * this.prevUserKey.length));
    ikey.copy(this.prevUserKey, 0, 0, userKeyLength);
    this.prevUserKeyLength = userKeyLength;
    this.hasPrev = true;
  }

  /** Advances the fragment cursor to the user key (keys only grow). */
  private seekFragment(ikey: Buffer, userKeyLength: number): void {
    const { starts, ends, count } = this.tombstones;
    let i = this.fragment;
    while (i < count && compareByteRanges(ikey, 0, userKeyLength, ends[i], 0, ends[i].length) >= 0) i++;
    this.fragment = i;
    this.insideFragment = i < count && compareByteRanges(ikey, 0, userKeyLength, starts[i], 0, starts[i].length) >= 0;
  }

  /** Rule 2: the smallest covering tombstone sequence above `seq` lies in the entry's stripe. */
  private coveredInStripe(seq: number, stripe: number): boolean {
    const t = this.tombstones;
    // Sequences are descending: scan from the oldest for the first one above `seq`.
    for (let j = t.seqOffsets[this.fragment + 1] - 1; j >= t.seqOffsets[this.fragment]; j--) {
      const tombstoneSeq = t.seqs[j];
      if (tombstoneSeq > seq) return this.stripe(tombstoneSeq) === stripe;
    }
    return false;
  }
}
