/**
 * Snapshots: pinned read points of an engine. A Snapshot holds its sequence number in the
 * engine's PinnedSequences until released (release is idempotent); compaction keeps every version
 * a pinned sequence can see. A file of its own so that the ingestion code, which takes a
 * snapshot's type, and the engine, which makes them, do not import each other.
 */
import { assertionFailed } from '../util/errors';

/**
 * The sequence numbers pinned by live snapshots and iterators, as reference counts. Counting by
 * number rather than keeping a Set of Snapshot objects matters because every iterator pins one:
 * a Set's add/delete of a fresh object (identity hashing, tombstones) cost 2.5% of seekrandom.
 */
export class PinnedSequences {
  private readonly refsBySequence = new Map<number, number>();
  private pinCount = 0;

  pin(sequence: number): void {
    this.refsBySequence.set(sequence, (this.refsBySequence.get(sequence) ?? 0) + 1);
    this.pinCount++;
  }

  unpin(sequence: number): void {
    const refs = this.refsBySequence.get(sequence);
    if (refs === undefined || refs <= 0) assertionFailed(`sequence ${sequence} unpinned more often than pinned`);
    if (refs === 1) this.refsBySequence.delete(sequence);
    else this.refsBySequence.set(sequence, refs - 1);
    this.pinCount--;
  }

  /** Live pins (snapshots plus open iterators). */
  get size(): number {
    return this.pinCount;
  }

  /** The pinned sequence numbers, ascending and distinct. */
  sequences(): number[] {
    return [...this.refsBySequence.keys()].sort((a, b) => a - b);
  }
}

/** A pinned read point: reads through it see exactly the writes up to `sequence`. */
export class Snapshot {
  private released = false;
  constructor(
    readonly sequence: number,
    private readonly owner: PinnedSequences,
  ) {
    owner.pin(sequence);
  }
  release(): void {
    if (this.released) return;
    this.released = true;
    this.owner.unpin(this.sequence);
  }
}
