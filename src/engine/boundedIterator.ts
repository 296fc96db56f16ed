/**
 * Iteration bounds for iterators that have no block structure to check them against (memtables):
 * a wrapper that checks each key it lands on against the bound in its direction of travel.
 *
 * Bounds are user keys: `lowerBound` inclusive, `upperBound` exclusive. Seeks clamp their target
 * into the bounds (seekGE to at least the lower bound, seekLT to at most the upper), so after a
 * forward move only the upper bound can be crossed and after a backward move only the lower
 * one: one comparison per key. Tables and levels do better (once per block or file, see
 * src/sstable/reader/tableIterator.ts and levelIterator.ts); this per-key cost is confined to memtables,
 * which hold the newest, smallest slice of the data.
 *
 * Contract: `setBounds` may be called between positioning calls, after which the iterator must
 * be re-positioned (the bounds are re-checked on every seek, RocksDB PR 5111), and the next
 * seekGE must not use trySeekUsingNext. Bound buffers are held by reference.
 */
import { InternalIterator, SeekOptions } from '../base/iterator';
import { perf } from '../base/perfContext';
import { compareByteRanges } from '../base/keyCompare';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, TRAILER_BYTES, ValueType } from '../base/internalKey';

/** An internal iterator whose bounds can be changed between seeks. */
export interface BoundedInternalIterator extends InternalIterator {
  setBounds(lowerBound: Buffer | undefined, upperBound: Buffer | undefined): void;
}

/** The smallest internal key with user key `bound`: where a bound starts in internal-key order. */
export function boundSeekKey(bound: Buffer): Buffer {
  return makeInternalKey(bound, MAX_SEQUENCE_NUMBER, ValueType.Seek);
}

/** Compares the user key of internal key `ikey` with user key `bound`; counts a bound comparison. */
export function compareToBound(ikey: Buffer, bound: Buffer): number {
  perf.keyComparisons++;
  perf.boundComparisons++;
  return compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, bound, 0, bound.length);
}

export class PerKeyBoundsIterator implements BoundedInternalIterator {
  private lowerBound: Buffer | null = null;
  private upperBound: Buffer | null = null;
  private lowerSeekKey: Buffer | null = null;
  private upperSeekKey: Buffer | null = null;
  private isValid = false;

  constructor(
    private readonly inner: InternalIterator,
    lowerBound?: Buffer,
    upperBound?: Buffer,
  ) {
    this.setBounds(lowerBound, upperBound);
  }

  setBounds(lowerBound: Buffer | undefined, upperBound: Buffer | undefined): void {
    this.lowerBound = lowerBound ?? null;
    this.upperBound = upperBound ?? null;
    this.lowerSeekKey = lowerBound === undefined ? null : boundSeekKey(lowerBound);
    this.upperSeekKey = upperBound === undefined ? null : boundSeekKey(upperBound);
    this.isValid = false;
  }

  valid(): boolean {
    return this.isValid;
  }

  key(): Buffer {
    return this.inner.key();
  }

  value(): Buffer {
    return this.inner.value();
  }

  first(): void {
    if (this.lowerSeekKey !== null) this.inner.seekGE(this.lowerSeekKey);
    else this.inner.first();
    this.checkUpper();
  }

  last(): void {
    if (this.upperSeekKey !== null) this.inner.seekLT(this.upperSeekKey);
    else this.inner.last();
    this.checkLower();
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    // Clamping keeps targets monotonic when the caller's are, so trySeekUsingNext stays valid.
    const t = this.lowerBound !== null && compareToBound(target, this.lowerBound) < 0 ? (this.lowerSeekKey as Buffer) : target;
    this.inner.seekGE(t, opts);
    this.checkUpper();
  }

  seekLT(target: Buffer): void {
    const t = this.upperBound !== null && compareToBound(target, this.upperBound) >= 0 ? (this.upperSeekKey as Buffer) : target;
    this.inner.seekLT(t);
    this.checkLower();
  }

  next(): void {
    this.inner.next();
    this.checkUpper();
  }

  prev(): void {
    this.inner.prev();
    this.checkLower();
  }

  close(): void {
    this.isValid = false;
    this.inner.close();
  }

  private checkUpper(): void {
    this.isValid = this.inner.valid() && (this.upperBound === null || compareToBound(this.inner.key(), this.upperBound) < 0);
  }

  private checkLower(): void {
    this.isValid = this.inner.valid() && (this.lowerBound === null || compareToBound(this.inner.key(), this.lowerBound) >= 0);
  }
}
