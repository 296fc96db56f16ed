/**
 * The conflict collector: what a scan strategy reports into. It keeps exact counts, the first
 * `maxReported` conflicts (key and the first bytes of both values, copied, since the scan's
 * views die when its iterators move), and, when asked, every conflicting key (for the `skip`
 * policy, which must drop them all from the new files).
 *
 * Memory: maxReported × (key + 2 × VALUE_SHOWN_MAX_BYTES) for the list, plus the total size of
 * the conflicting keys when they are collected. A check that streams its report takes the list
 * out as it goes (takeReported), so only the conflicts not yet written are held. Nothing is allocated for a match or a new key.
 */
import { DbIterator } from '../engine/dbIterator';
import { VALUE_SHOWN_MAX_BYTES } from './report';
import { UnchangedRuns } from './unchangedRuns';

export interface PendingConflict {
  key: Buffer;
  /** The first VALUE_SHOWN_MAX_BYTES bytes of each value, and the full sizes. */
  existingValue: Buffer;
  existingSizeBytes: number;
  newValue: Buffer;
  newSizeBytes: number;
  /** Sequence number of the engine's version, or -1 when the strategy could not see it. */
  existingSeq: number;
  /** Index into SstSet.files of the file holding the new row. */
  fileIndex: number;
}

export class ConflictCollector {
  unchanged = 0;
  conflicts = 0;
  engineKeysVisited = 0;
  /** Listed conflicts held (all of them, unless a streaming report takes them out: takeReported). */
  readonly reported: PendingConflict[] = [];
  /** Conflicts listed so far (at most maxReported), held or taken out. */
  listed = 0;
  /** The most listed conflicts held at once. */
  heldMax = 0;
  readonly allKeys: Buffer[] | null;
  /** Runs of unchanged SST entries, when asked for (to leave them out of the ingestion). */
  readonly unchangedRuns: UnchangedRuns | null;
  private readonly maxReported: number;

  constructor(maxReported: number, collectAllKeys: boolean, unchangedRuns: UnchangedRuns | null = null) {
    this.maxReported = maxReported;
    this.allKeys = collectAllKeys ? [] : null;
    this.unchangedRuns = unchangedRuns;
  }

  /** An SST key whose live value is the same; `key` is a view valid only during the call. */
  unchangedRow(key: Buffer, fileIndex: number): void {
    this.unchanged++;
    this.unchangedRuns?.add(key, fileIndex);
  }

  /** SST keys the engine does not hold were passed over (new rows): an unchanged run ends. */
  newRows(): void {
    this.unchangedRuns?.end();
  }

  /**
   * A key present in both with different values. `key` and the values are views valid only
   * during the call. `engine`, when given, stands on the engine's version (its sequence number
   * is read only for a listed conflict); without it the sequence number is left for later (-1).
   */
  conflict(key: Buffer, existingValue: Buffer, newValue: Buffer, engine: DbIterator | null, fileIndex: number): void {
    this.conflicts++;
    this.unchangedRuns?.end();
    const listing = this.listed < this.maxReported;
    const copy = listing || this.allKeys !== null ? Buffer.from(key) : null;
    if (this.allKeys !== null) this.allKeys.push(copy as Buffer);
    if (!listing) return;
    this.listed++;
    this.reported.push({
      key: copy as Buffer,
      existingValue: prefixCopy(existingValue),
      existingSizeBytes: existingValue.length,
      newValue: prefixCopy(newValue),
      newSizeBytes: newValue.length,
      existingSeq: engine !== null ? engine.sequenceNumber() : -1,
      fileIndex,
    });
    if (this.reported.length > this.heldMax) this.heldMax = this.reported.length;
  }

  /** The listed conflicts held, handed over and forgotten (a streaming report writes them out as the scan goes). */
  takeReported(): PendingConflict[] {
    return this.reported.splice(0, this.reported.length);
  }
}

function prefixCopy(v: Buffer): Buffer {
  return Buffer.from(v.subarray(0, Math.min(v.length, VALUE_SHOWN_MAX_BYTES)));
}
