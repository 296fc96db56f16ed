/**
 * The conflict collector: what a scan strategy reports into. It keeps exact counts, the first
 * `maxReported` conflicts (key and the first bytes of both values, copied, since the scan's
 * views die when its iterators move), and, when asked, every conflicting key (for the `skip`
 * policy, which must drop them all from the new files).
 *
 * Memory: maxReported × (key + 2 × VALUE_SHOWN_MAX_BYTES) for the list, plus the total size of
 * the conflicting keys when they are collected. Nothing is allocated for a match or a new key.
 */
import { DbIterator } from '../engine/dbIterator';
import { VALUE_SHOWN_MAX_BYTES } from './report';

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
  readonly reported: PendingConflict[] = [];
  readonly allKeys: Buffer[] | null;
  private readonly maxReported: number;

  constructor(maxReported: number, collectAllKeys: boolean) {
    this.maxReported = maxReported;
    this.allKeys = collectAllKeys ? [] : null;
  }

  /**
   * A key present in both with different values. `key` and the values are views valid only
   * during the call. `engine`, when given, stands on the engine's version (its sequence number
   * is read only for a listed conflict); without it the sequence number is left for later (-1).
   */
  conflict(key: Buffer, existingValue: Buffer, newValue: Buffer, engine: DbIterator | null, fileIndex: number): void {
    this.conflicts++;
    const copy = this.reported.length < this.maxReported || this.allKeys !== null ? Buffer.from(key) : null;
    if (this.allKeys !== null) this.allKeys.push(copy as Buffer);
    if (this.reported.length >= this.maxReported) return;
    this.reported.push({
      key: copy as Buffer,
      existingValue: prefixCopy(existingValue),
      existingSizeBytes: existingValue.length,
      newValue: prefixCopy(newValue),
      newSizeBytes: newValue.length,
      existingSeq: engine !== null ? engine.sequenceNumber() : -1,
      fileIndex,
    });
  }
}

function prefixCopy(v: Buffer): Buffer {
  return Buffer.from(v.subarray(0, Math.min(v.length, VALUE_SHOWN_MAX_BYTES)));
}
