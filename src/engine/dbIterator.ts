/**
 * The user-facing iterator: user keys and values of one consistent snapshot of the database,
 * built on the merging iterator over memtables and levels.
 *
 * What it hides from the internal stream (internal-key order: user key ascending, newest
 * version first):
 * - versions newer than the read sequence (written after the snapshot),
 * - older versions of a user key once its newest visible version has been seen,
 * - keys whose newest visible version is a point deletion, or is covered by a range tombstone
 *   visible at the read sequence with a larger sequence number than it.
 *
 * Range tombstones come from a RangeDelAggregator the iterator shares with its sources: memtables
 * add theirs up front, level iterators add each file's as they open it (see levelIterator.ts for
 * why that suffices). The aggregator keeps its place among the fragments from one key to the next,
 * so a step costs at most two comparisons while the key stays between two fragment boundaries,
 * and nothing at all (no comparison, no allocation) while no source has a tombstone. Only the
 * newest visible version of a key is checked going forward (it decides the key); backward, each
 * visible version is, in the same region, so the aggregator answers from its cached region.
 *
 * Forward, the internal iterator stands on the entry being returned, so key() and value() are
 * views into it; stepping on costs one user-key comparison per internal entry (is it still the
 * key just returned?). Backward, LevelDB's scheme: the iterator walks back through all versions
 * of the previous user key, keeping the newest visible one in a saved key/value buffer, and ends
 * standing before that key. Switching direction repositions accordingly. A key with more than
 * MAX_SEQUENTIAL_SKIPS hidden versions is skipped by one reseek instead of step by step, and
 * after MAX_SEQUENTIAL_SKIPS range-deleted keys in a row the merging iterator moves the children
 * that hold only deleted entries there past the covered span (skipCoveredSpan; backward,
 * skipCoveredSpanBackward to its start).
 *
 * Bounds (user keys, lower inclusive, upper exclusive) are enforced by the children: per data
 * block in tables, per file in levels, per key only in memtables. This iterator never compares
 * a key with a bound; `setBounds` passes new bounds down and the iterator must be re-positioned.
 *
 * trySeekUsingNext (Pebble's contract for the user-facing iterator): `seekGE(k, {trySeekUsingNext:
 * true})` promises that k >= the previous seekGE target and that since that seek the iterator
 * moved only by next() and not past the first key >= k. Then a current key >= k is already the
 * answer (one comparison), an exhausted iterator stays exhausted, and otherwise the flag goes to
 * the merging iterator: the internal iterator stands on the current key's newest visible entry,
 * which is < (k, read seq), and every entry it passed was below that, so the internal seek
 * satisfies the internal contract (src/base/iterator.ts). For the same reason the reseek past a key's
 * hidden versions (MAX_SEQUENTIAL_SKIPS) also goes forward with the flag and keeps it allowed:
 * its target is an entry of the key the iterator stands past, below any later caller target
 * that the check above lets through. The flag is ignored after a backward move, first/last, or
 * setBounds.
 *
 * Key and value views stay valid until the iterator next moves. Seek targets and bounds are
 * strings (UTF-8) or bytes (bytesInput.ts), converted once per call.
 */
import { CoveredRangeSkipper, InternalIterator, SeekOptions } from '../base/iterator';
import { BoundedInternalIterator } from './boundedIterator';
import { compareByteRanges } from '../base/keyCompare';
import { perf } from '../base/perfContext';
import { MAX_SEQUENCE_NUMBER, sequenceOf, TRAILER_BYTES, typeOf, ValueType, writeTrailer } from '../base/internalKey';
import { assert } from '../util/errors';
import { RangeDelAggregator, RangeDelDirection } from './rangedel/rangeDelAggregator';
import { BytesInput, toBytes, toBytesOrUndefined } from './bytesInput';

const TRY_SEEK_USING_NEXT: SeekOptions = { trySeekUsingNext: true };

function isCoveredRangeSkipper(it: InternalIterator): it is InternalIterator & CoveredRangeSkipper {
  return typeof (it as Partial<CoveredRangeSkipper>).skipCoveredForward === 'function';
}

/** Hidden versions of one key stepped over before reseeking past them (RocksDB's default). */
export const MAX_SEQUENTIAL_SKIPS = 8;

export interface DbIteratorOptions {
  lowerBound?: Buffer;
  upperBound?: Buffer;
}

export interface DbSeekOptions {
  trySeekUsingNext?: boolean;
}

const enum Direction {
  Forward,
  Reverse,
}

/** A growable byte buffer for saved keys and values, reused across positions. */
/** Bytes copied byte by byte up to this length: cheaper than Buffer#copy's call for short keys. */
const SHORT_COPY_BYTES = 32;

class SavedBytes {
  buf: Buffer = Buffer.allocUnsafe(64);
  length = 0;
  /** The last view handed out, reused while buf and length stay (the contents change under it). */
  private lastView: Buffer | null = null;
  set(src: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n > this.buf.length) {
      this.buf = Buffer.allocUnsafe(Math.max(n, 2 * this.buf.length));
      this.lastView = null;
    }
    const buf = this.buf;
    if (n <= SHORT_COPY_BYTES) {
      for (let i = 0; i < n; i++) buf[i] = src[start + i];
    } else {
      src.copy(buf, 0, start, end);
    }
    this.length = n;
  }
  view(): Buffer {
    if (this.lastView === null || this.lastView.length !== this.length) this.lastView = this.buf.subarray(0, this.length);
    return this.lastView;
  }
}

export class DbIterator {
  private readonly internal: InternalIterator;
  private readonly boundedChildren: readonly BoundedInternalIterator[];
  private readonly readSeq: number;
  private readonly onClose: () => void;
  private direction = Direction.Forward;
  private isValid = false;
  /** The current user key; while skipping forward, the key whose older versions are skipped. */
  private readonly savedKey = new SavedBytes();
  /** Reverse only: the current value. */
  private readonly savedValue = new SavedBytes();
  /** Reverse only: the current entry's sequence number. */
  private savedSequence = 0;
  /** Since the last seekGE: moved only forward (trySeekUsingNext allowed). */
  private trySeekAllowed = false;
  /** Internal seek keys are built here; `seekKeyView` is reused while their length stays. */
  private seekKeyBuf: Buffer = Buffer.allocUnsafe(64);
  private seekKeyView: Buffer = this.seekKeyBuf.subarray(0, 0);
  /** The trailer (read sequence, Seek) of forward seek keys. */
  private readonly readSeekTrailer: Buffer = Buffer.alloc(TRAILER_BYTES);
  private closed = false;
  private readonly rangeDel: RangeDelAggregator;
  /** The internal iterator, when it can skip range-deleted spans in bulk. */
  private readonly skipper: CoveredRangeSkipper | null;

  /**
   * `rangeDel` holds (or will be given, by the children) the range tombstones of the sources;
   * without one, no key is range-deleted.
   */
  constructor(
    internal: InternalIterator,
    boundedChildren: readonly BoundedInternalIterator[],
    readSeq: number,
    onClose: () => void,
    rangeDel: RangeDelAggregator = new RangeDelAggregator(),
  ) {
    this.internal = internal;
    this.boundedChildren = boundedChildren;
    this.readSeq = readSeq;
    this.onClose = onClose;
    this.rangeDel = rangeDel;
    this.skipper = isCoveredRangeSkipper(internal) ? internal : null;
    writeTrailer(this.readSeekTrailer, 0, readSeq, ValueType.Seek);
  }

  /** The sequence number this iterator reads at. */
  get sequence(): number {
    return this.readSeq;
  }

  valid(): boolean {
    return this.isValid;
  }

  /** The current user key (a view, valid until the iterator moves). */
  key(): Buffer {
    assert(this.isValid, 'DbIterator.key() on an invalid iterator');
    return this.savedKey.view();
  }

  value(): Buffer {
    assert(this.isValid, 'DbIterator.value() on an invalid iterator');
    return this.direction === Direction.Reverse ? this.savedValue.view() : this.internal.value();
  }

  /**
   * The sequence number of the current entry: the version of key() that value() returns (for
   * reports that say which write a value came from).
   */
  sequenceNumber(): number {
    assert(this.isValid, 'DbIterator.sequenceNumber() on an invalid iterator');
    return this.direction === Direction.Reverse ? this.savedSequence : sequenceOf(this.internal.key());
  }

  /** Replaces the bounds; re-position the iterator afterwards. */
  setBounds(lowerBoundInput?: BytesInput, upperBoundInput?: BytesInput): void {
    this.checkOpen();
    const lowerBound = toBytesOrUndefined(lowerBoundInput);
    const upperBound = toBytesOrUndefined(upperBoundInput);
    for (const c of this.boundedChildren) c.setBounds(lowerBound, upperBound);
    this.isValid = false;
    this.trySeekAllowed = false;
  }

  first(): void {
    this.checkOpen();
    this.direction = Direction.Forward;
    this.trySeekAllowed = false;
    this.internal.first();
    this.findNextUserEntry(false);
  }

  last(): void {
    this.checkOpen();
    this.trySeekAllowed = false;
    this.direction = Direction.Reverse;
    this.internal.last();
    this.findPrevUserEntry();
  }

  seekGE(userKeyInput: BytesInput, opts?: DbSeekOptions): void {
    this.checkOpen();
    const userKey = toBytes(userKeyInput);
    if (opts !== undefined && opts.trySeekUsingNext === true && this.trySeekAllowed && this.direction === Direction.Forward) {
      if (!this.isValid) return; // exhausted moving forward: nothing >= a larger target either
      perf.keyComparisons++;
      const cur = this.internal.key();
      if (compareByteRanges(cur, 0, cur.length - TRAILER_BYTES, userKey, 0, userKey.length) >= 0) return;
      this.internal.seekGE(this.seekKey(userKey, this.readSeq, ValueType.Seek), TRY_SEEK_USING_NEXT);
    } else {
      this.internal.seekGE(this.seekKey(userKey, this.readSeq, ValueType.Seek));
    }
    this.direction = Direction.Forward;
    this.trySeekAllowed = true;
    this.findNextUserEntry(false);
  }

  seekLT(userKeyInput: BytesInput): void {
    this.checkOpen();
    const userKey = toBytes(userKeyInput);
    this.trySeekAllowed = false;
    this.direction = Direction.Reverse;
    // (userKey, max seq) is the first internal key of userKey: everything before it is < userKey.
    this.internal.seekLT(this.seekKey(userKey, MAX_SEQUENCE_NUMBER, ValueType.Seek));
    this.findPrevUserEntry();
  }

  next(): void {
    this.checkOpen();
    assert(this.isValid, 'DbIterator.next() on an invalid iterator');
    if (this.direction === Direction.Reverse) {
      // The internal iterator stands before the current key's versions: step back onto them,
      // then skip them all.
      this.direction = Direction.Forward;
      this.trySeekAllowed = false;
      if (this.internal.valid()) this.internal.next();
      else this.internal.first();
    } else {
      // savedKey holds the current key (findNextUserEntry put it there): skip its versions.
      this.internal.next();
    }
    this.findNextUserEntry(true);
  }

  prev(): void {
    this.checkOpen();
    assert(this.isValid, 'DbIterator.prev() on an invalid iterator');
    this.trySeekAllowed = false;
    if (this.direction === Direction.Forward) {
      // Step back past every entry of the current key, then scan backward as usual.
      const ikey = this.internal.key();
      this.savedKey.set(ikey, 0, ikey.length - TRAILER_BYTES);
      const saved = this.savedKey.buf;
      const savedLength = this.savedKey.length;
      for (;;) {
        this.internal.prev();
        if (!this.internal.valid()) {
          this.isValid = false;
          return;
        }
        const k = this.internal.key();
        perf.keyComparisons++;
        if (compareByteRanges(k, 0, k.length - TRAILER_BYTES, saved, 0, savedLength) < 0) break;
      }
      this.direction = Direction.Reverse;
    }
    this.findPrevUserEntry();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.isValid = false;
    this.internal.close();
    this.onClose();
  }

  // --- internals -------------------------------------------------------------------------------

  private checkOpen(): void {
    assert(!this.closed, 'DbIterator used after close()');
  }

  /**
   * (userKey, seq, type) in the reused seek-key buffer. The view is valid until the next call;
   * the children do not keep seek targets, so one view serves every seek of the same length.
   */
  private seekKey(userKey: Buffer, seq: number, type: ValueType): Buffer {
    const userKeyLength = userKey.length;
    const n = userKeyLength + TRAILER_BYTES;
    if (this.seekKeyBuf.length < n) {
      this.seekKeyBuf = Buffer.allocUnsafe(Math.max(n, 2 * this.seekKeyBuf.length));
      this.seekKeyView = this.seekKeyBuf.subarray(0, 0);
    }
    if (this.seekKeyView.length !== n) this.seekKeyView = this.seekKeyBuf.subarray(0, n);
    const buf = this.seekKeyBuf;
    if (userKeyLength <= SHORT_COPY_BYTES) {
      for (let i = 0; i < userKeyLength; i++) buf[i] = userKey[i];
    } else {
      userKey.copy(buf, 0);
    }
    if (seq === this.readSeq && type === ValueType.Seek) {
      // The trailer of every forward seek: encoded once.
      const trailer = this.readSeekTrailer;
      for (let i = 0; i < TRAILER_BYTES; i++) buf[userKeyLength + i] = trailer[i];
    } else {
      writeTrailer(buf, userKeyLength, seq, type);
    }
    return this.seekKeyView;
  }

  /**
   * Moves forward from the internal position to the first visible, undeleted user key. With
   * `skipping`, entries of savedKey (the key just returned or deleted) are stepped over.
   */
  private findNextUserEntry(skipping: boolean): void {
    const it = this.internal;
    let skipped = 0;
    /** Range-deleted user keys met in a row (see skipCoveredSpan). */
    let rangeDeletedKeys = 0;
    while (it.valid()) {
      const ikey = it.key();
      const userKeyLength = ikey.length - TRAILER_BYTES;
      if (sequenceOf(ikey) <= this.readSeq) {
        perf.keyComparisons += skipping ? 1 : 0;
        if (skipping && compareByteRanges(ikey, 0, userKeyLength, this.savedKey.buf, 0, this.savedKey.length) <= 0) {
          // An older version of a key already returned or deleted.
          if (++skipped > MAX_SEQUENTIAL_SKIPS) {
            this.reseekPast(this.savedKey.view());
            skipped = 0;
            continue;
          }
        } else {
          const type = typeOf(ikey);
          const rangeDeleted = type === ValueType.Value && this.rangeDel.shouldDelete(ikey, this.readSeq, RangeDelDirection.Forward);
          if (type === ValueType.Value && !rangeDeleted) {
            // Saved now rather than at next(): key() then returns one reusable view of it.
            this.savedKey.set(ikey, 0, userKeyLength);
            this.isValid = true;
            return;
          }
          // A deletion, a range-deleted value (or a type this engine does not write): the key is
          // hidden; skip its versions.
          this.savedKey.set(ikey, 0, userKeyLength);
          skipping = true;
          skipped = 0;
          if (rangeDeleted && ++rangeDeletedKeys > MAX_SEQUENTIAL_SKIPS) {
            // A run of range-deleted keys: let the children holding only deleted entries there
            // jump to the end of the covered span (see MergingIterator.skipCoveredForward).
            rangeDeletedKeys = 0;
            if (this.skipCoveredSpan()) continue;
          }
        }
      }
      it.next();
    }
    this.isValid = false;
  }

  /**
   * The key just met (savedKey) is range-deleted: asks the merging iterator to move the children
   * that hold nothing newer than the covering tombstone to the end of the span it covers whole
   * (RangeDelAggregator.coveredSpanEnd). Returns whether the internal position changed. Without
   * it a scan over N deleted keys visits all N; with it, about MAX_SEQUENTIAL_SKIPS per child
   * and span.
   */
  private skipCoveredSpan(): boolean {
    if (this.skipper === null) return false;
    const end = this.rangeDel.coveredSpanEnd();
    const coveringSeq = this.rangeDel.lastCoveringSeq();
    if (end === null || coveringSeq === 0) return false;
    return this.skipper.skipCoveredForward(end, coveringSeq);
  }

  /** skipCoveredSpan's mirror, moving backward to the covered span's start. */
  private skipCoveredSpanBackward(): boolean {
    if (this.skipper === null) return false;
    const start = this.rangeDel.coveredSpanStart();
    const coveringSeq = this.rangeDel.lastCoveringSeq();
    if (start === null || coveringSeq === 0) return false;
    return this.skipper.skipCoveredBackward(start, coveringSeq);
  }

  /**
   * Seeks to the first entry after every version of `userKey` (savedKey, where the internal
   * iterator stands). The target is ahead of the internal position and the internal iterator
   * moved only forward since its last seekGE (or it will ignore the flag), so the seek goes
   * forward with trySeekUsingNext (see the module comment).
   */
  private reseekPast(userKey: Buffer): void {
    // (userKey, 0, Deletion) is the last possible internal key of userKey.
    const target = this.seekKey(userKey, 0, ValueType.Deletion);
    this.internal.seekGE(target, TRY_SEEK_USING_NEXT);
    const it = this.internal;
    if (it.valid()) {
      const k = it.key();
      perf.keyComparisons++;
      if (compareByteRanges(k, 0, k.length - TRAILER_BYTES, userKey, 0, userKey.length) === 0) it.next();
    }
  }

  /**
   * Scans backward from the internal position for the newest visible version of the previous
   * user key; leaves it in savedKey/savedValue and the internal iterator before its versions.
   */
  private findPrevUserEntry(): void {
    const it = this.internal;
    let type = ValueType.Deletion;
    /** Range-deleted entries met in a row while no newer visible version is pending. */
    let rangeDeletedEntries = 0;
    while (it.valid()) {
      const ikey = it.key();
      if (sequenceOf(ikey) <= this.readSeq) {
        const userKeyLength = ikey.length - TRAILER_BYTES;
        if (type !== ValueType.Deletion) {
          perf.keyComparisons++;
          if (compareByteRanges(ikey, 0, userKeyLength, this.savedKey.buf, 0, this.savedKey.length) < 0) break;
        }
        const rangeDeleted = typeOf(ikey) === ValueType.Value && this.rangeDel.shouldDelete(ikey, this.readSeq, RangeDelDirection.Backward);
        type = typeOf(ikey) === ValueType.Value && !rangeDeleted ? ValueType.Value : ValueType.Deletion;
        if (rangeDeleted && ++rangeDeletedEntries > MAX_SEQUENTIAL_SKIPS) {
          // A run of range-deleted entries: nothing is pending (type is Deletion), and whatever
          // the skipped children held down to the covered span's start is deleted too.
          rangeDeletedEntries = 0;
          if (this.skipCoveredSpanBackward()) continue;
        }
        if (type === ValueType.Value) {
          this.savedKey.set(ikey, 0, userKeyLength);
          const v = it.value();
          this.savedValue.set(v, 0, v.length);
          this.savedSequence = sequenceOf(ikey);
        }
      }
      it.prev();
    }
    if (type === ValueType.Deletion) {
      this.isValid = false;
      this.direction = Direction.Forward;
    } else {
      this.isValid = true;
      this.direction = Direction.Reverse;
    }
  }
}
