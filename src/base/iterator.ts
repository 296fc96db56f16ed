/**
 * The internal iterator interface every layer composes through: blocks, tables, memtables,
 * levels, and the merging iterator all implement it, so a merge or a bound check is written once.
 *
 * Contract:
 * - Keys are internal keys (user key ‖ 8-byte trailer) in internal-key order. `key()` and
 *   `value()` return views that stay valid only until the iterator next moves; copy to keep.
 * - Positioning calls (`first`, `last`, `seekGE`, `seekLT`) may be made at any time; `next` and
 *   `prev` only while `valid()`. After any call, `valid()` says whether it stands on an entry.
 * - `seekGE(target, {trySeekUsingNext: true})` is a promise from the caller (Pebble's contract):
 *   `target` is >= the previous seekGE target, and since that seek the iterator has been moved
 *   only forward (by seekGE and next) and not past the first entry >= `target`. So every entry
 *   before the current one is < `target`, and an iterator exhausted moving forward stays
 *   exhausted: the iterator may search forward from where it stands instead of from scratch.
 *   Without the flag, seekGE is a full search.
 * - Corruption is thrown (CorruptionError), never turned into "not valid".
 * - `close()` releases pinned resources (blocks, files). Using a closed iterator is a bug.
 */

export interface SeekOptions {
  trySeekUsingNext?: boolean;
}

export interface InternalIterator {
  valid(): boolean;
  key(): Buffer;
  value(): Buffer;
  first(): void;
  last(): void;
  seekGE(target: Buffer, opts?: SeekOptions): void;
  seekLT(target: Buffer): void;
  next(): void;
  prev(): void;
  close(): void;
  /**
   * Optional, for skipping range-deleted keys: an upper bound on the sequence number of every
   * entry and range tombstone this iterator could yield moving forward from its current entry
   * up to (excluding) user key `endUserKey`. Only asked while valid. An iterator that cannot tell
   * does not implement it, and is then never skipped.
   */
  largestSeqBefore?(endUserKey: Buffer): number;
  /** The same moving backward: entries and tombstones from the current entry down to user key `startUserKey` (inclusive). */
  largestSeqFrom?(startUserKey: Buffer): number;
}

/**
 * An iterator that can skip range-deleted entries in bulk (the merging iterator; see
 * MergingIterator.skipCoveredForward).
 */
export interface CoveredRangeSkipper {
  /**
   * Moving forward: every child whose entries from its current one up to `endUserKey` are all
   * older than `coveringSeq` seeks to `endUserKey`, since a range tombstone of that sequence
   * number, visible to the reader, covers that whole span. Returns whether any child moved.
   */
  skipCoveredForward(endUserKey: Buffer, coveringSeq: number): boolean;
  /**
   * Moving backward: every child whose entries from its current one down to `startUserKey` are
   * all older than `coveringSeq` seeks to its last entry before `startUserKey`.
   */
  skipCoveredBackward(startUserKey: Buffer, coveringSeq: number): boolean;
}

/**
 * How many `next` steps a layer tries under trySeekUsingNext before it falls back to a real
 * seek. Pebble uses 4 to 5: enough to cover the common "next key is close" case, few enough that
 * a long skip costs little more than the binary search it replaces.
 */
export const TRY_SEEK_USING_NEXT_STEPS = 4;
