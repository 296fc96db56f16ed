/**
 * The in-memory model the randomized engine tests check against: every version of every key with
 * its sequence number, and the reads an engine at a sequence number must give. A range deletion
 * [s, e)@q is applied as a point deletion at q of every key in [s, e) written so far: every
 * version written before it has a smaller sequence number and every later one a larger, which is
 * exactly the engine's rule (a tombstone deletes covered versions with smaller sequence numbers).
 */

/** Versions of one key, oldest first; value null = deleted. */
export type History = Array<{ seq: number; value: string | null }>;

export class Model {
  readonly versions = new Map<string, History>();
  /** Every key ever written, sorted (bytewise = string order for these ASCII keys). */
  readonly sortedKeys: string[] = [];
  seq = 0;

  lowerIndex(k: string): number {
    let lo = 0;
    let hi = this.sortedKeys.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.sortedKeys[mid] < k) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  apply(key: string, value: string | null, seq: number): void {
    let h = this.versions.get(key);
    if (h === undefined) {
      if (value === null) return; // deleting a key never written changes no read
      h = [];
      this.versions.set(key, h);
      this.sortedKeys.splice(this.lowerIndex(key), 0, key);
    }
    h.push({ seq, value });
  }

  deleteRange(start: string, end: string, seq: number): number {
    let n = 0;
    for (let i = this.lowerIndex(start); i < this.sortedKeys.length && this.sortedKeys[i] < end; i++, n++) {
      (this.versions.get(this.sortedKeys[i]) as History).push({ seq, value: null });
    }
    return n;
  }

  get(key: string, readSeq: number): string | null {
    const h = this.versions.get(key);
    if (h === undefined) return null;
    for (let i = h.length - 1; i >= 0; i--) if (h[i].seq <= readSeq) return h[i].value;
    return null;
  }

  /** Live keys in [lower, upper) at readSeq, from index `start` in direction `dir`. */
  scan(readSeq: number, lower: string | null, upper: string | null, start: number, dir: 1 | -1, limit: number): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (let i = start; i >= 0 && i < this.sortedKeys.length && out.length < limit; i += dir) {
      const k = this.sortedKeys[i];
      if (lower !== null && k < lower) {
        if (dir < 0) break;
        continue;
      }
      if (upper !== null && k >= upper) {
        if (dir > 0) break;
        continue;
      }
      const v = this.get(k, readSeq);
      if (v !== null) out.push([k, v]);
    }
    return out;
  }
}
