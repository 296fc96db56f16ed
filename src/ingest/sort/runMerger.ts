/**
 * The k-way merge of sorted runs: a tournament tree of losers over the run readers, ordered by
 * (key bytewise, source, line), so rows with equal keys come out in input order whichever runs
 * (or parse workers) they went through.
 *
 * Why a loser tree: taking the smallest entry and replacing it with its reader's next one costs
 * exactly ceil(log2 k) comparisons (a binary heap's sift-down costs about twice that), and the
 * path replayed is fixed by the reader's leaf, not by the data.
 *
 * Why key prefixes: each reader's current key has its first 8 bytes (zero-padded) cached as two
 * unsigned 32-bit numbers in typed arrays. Zero-padding keeps bytewise order: if the padded
 * prefixes differ, they differ exactly as the keys do (a shorter key differs from a longer one,
 * at its first missing byte, by a 0 against a byte >= 0, and a key that is a proper prefix of
 * another sorts first). So almost every comparison is two number comparisons; only equal
 * prefixes (duplicates, or keys sharing 8 leading bytes) look at the bytes. An exhausted reader
 * has the prefix +Infinity and loses to every live one.
 *
 * Bounds: an optional key range [low, high): readers skip entries below `low` before the tree is
 * built (a parallel merge starts them at a sample below their range), and `next()` reports the
 * end once the smallest entry is at or past `high`.
 *
 * Contract: after `next()` returns true, `current` is the reader holding the smallest entry and
 * `currentPrefixHigh` / `currentPrefixLow` its key prefix words; its key/value bytes are valid
 * until the next call.
 * Memory: one read buffer per run (`readBufferBytes`), nothing per entry.
 */
import { RunInfo, RunReadRegion, RunReader } from './runFile';

/** Key bytes a prefix covers. */
export const PREFIX_BYTES = 8;

/** Bytewise comparison of a[as, ae) and b[bs, be) without allocating. */
export function compareRanges(a: Uint8Array, as: number, ae: number, b: Uint8Array, bs: number, be: number): number {
  const la = ae - as;
  const lb = be - bs;
  const n = la < lb ? la : lb;
  if (n > 32 && a instanceof Buffer) {
    const c = a.compare(b, bs, bs + n, as, as + n);
    if (c !== 0) return c;
    return la - lb;
  }
  for (let i = 0; i < n; i++) {
    const d = a[as + i] - b[bs + i];
    if (d !== 0) return d;
  }
  return la - lb;
}

/** Big-endian uint32 of key bytes [from, from + 4) of buf[start, end), zero-padded past end. */
export function prefixWord(buf: Uint8Array, start: number, end: number, from: number): number {
  const p = start + from;
  if (p + 4 <= end) return ((buf[p] << 24) | (buf[p + 1] << 16) | (buf[p + 2] << 8) | buf[p + 3]) >>> 0;
  let w = 0;
  for (let i = 0; i < 4; i++) w = w * 256 + (p + i < end ? buf[p + i] : 0);
  return w;
}

export interface MergeBounds {
  /** Per run, where to start reading (a sample offset); default: the start of each run. */
  startOffsets?: readonly number[];
  /** Entries with keys below this are skipped; null: none. */
  low?: Uint8Array | null;
  /** The merge ends at the first key at or above this; null: none. */
  high?: Uint8Array | null;
  /** Unlink each run as soon as it is read to the end (this merge is its only reader). */
  deleteRuns?: boolean;
  /** Per run, where its reader stops and what it punches (RunReader); default: to the end, nothing. */
  regions?: readonly (RunReadRegion | null)[];
}

export class RunMerger {
  private readonly readers: RunReader[] = [];
  private readonly k: number;
  /** Prefix words of each reader's current key; +Infinity once it is exhausted. */
  private readonly prefixHigh: Float64Array;
  private readonly prefixLow: Float64Array;
  /** tree[1 .. k) hold the loser of each match; leaf of reader i is node k + i. */
  private readonly tree: Int32Array;
  private winner = -1;
  private started = false;
  private readonly lowBoundKey: Uint8Array | null;
  private readonly highBoundKey: Uint8Array | null;
  private readonly highBoundPrefixHigh: number;
  private readonly highBoundPrefixLow: number;
  current: RunReader | null = null;
  currentPrefixHigh = 0;
  currentPrefixLow = 0;

  constructor(runs: readonly RunInfo[], readBufferBytes: number, bounds: MergeBounds = {}) {
    try {
      runs.forEach((r, i) =>
        this.readers.push(
          new RunReader(r, readBufferBytes, bounds.startOffsets?.[i], bounds.deleteRuns ?? false, bounds.regions?.[i] ?? null),
        ),
      );
    } catch (e) {
      this.close();
      throw e;
    }
    this.k = this.readers.length;
    this.prefixHigh = new Float64Array(this.k);
    this.prefixLow = new Float64Array(this.k);
    this.tree = new Int32Array(Math.max(this.k, 1));
    this.lowBoundKey = bounds.low ?? null;
    this.highBoundKey = bounds.high ?? null;
    this.highBoundPrefixHigh = this.highBoundKey === null ? 0 : prefixWord(this.highBoundKey, 0, this.highBoundKey.length, 0);
    this.highBoundPrefixLow = this.highBoundKey === null ? 0 : prefixWord(this.highBoundKey, 0, this.highBoundKey.length, 4);
  }

  /** Moves reader i to its next entry and caches its prefix (or marks it exhausted). */
  private advance(i: number): void {
    const r = this.readers[i];
    if (!r.next()) {
      this.prefixHigh[i] = Infinity;
      this.prefixLow[i] = Infinity;
      return;
    }
    const buf = r.buf;
    const s = r.keyStart;
    const e = r.keyEnd;
    if (e - s >= PREFIX_BYTES) {
      this.prefixHigh[i] = ((buf[s] << 24) | (buf[s + 1] << 16) | (buf[s + 2] << 8) | buf[s + 3]) >>> 0;
      this.prefixLow[i] = ((buf[s + 4] << 24) | (buf[s + 5] << 16) | (buf[s + 6] << 8) | buf[s + 7]) >>> 0;
    } else {
      this.prefixHigh[i] = prefixWord(buf, s, e, 0);
      this.prefixLow[i] = prefixWord(buf, s, e, 4);
    }
  }

  /** True when reader a's entry comes before reader b's (an exhausted reader comes after all). */
  private before(a: number, b: number): boolean {
    const ha = this.prefixHigh[a];
    const hb = this.prefixHigh[b];
    if (ha !== hb) return ha < hb;
    const la = this.prefixLow[a];
    const lb = this.prefixLow[b];
    if (la !== lb) return la < lb;
    if (ha === Infinity) return a < b; // both exhausted: any fixed order
    return this.compareFull(a, b) < 0;
  }

  /** Full comparison of two live readers' entries: key bytes, then source, then line. */
  private compareFull(a: number, b: number): number {
    const x = this.readers[a];
    const y = this.readers[b];
    const c = compareRanges(x.buf, x.keyStart, x.keyEnd, y.buf, y.keyStart, y.keyEnd);
    if (c !== 0) return c;
    if (x.source !== y.source) return x.source - y.source;
    return x.line - y.line;
  }

  /** Winner of the subtree at `node`; records the losers below it. */
  private build(node: number): number {
    if (node >= this.k) return node - this.k;
    const a = this.build(2 * node);
    const b = this.build(2 * node + 1);
    if (this.before(a, b)) {
      this.tree[node] = b;
      return a;
    }
    this.tree[node] = a;
    return b;
  }

  private start(): void {
    this.started = true;
    const lowKey = this.lowBoundKey;
    for (let i = 0; i < this.k; i++) {
      this.advance(i);
      if (lowKey === null) continue;
      const r = this.readers[i];
      while (this.prefixHigh[i] !== Infinity && compareRanges(r.buf, r.keyStart, r.keyEnd, lowKey, 0, lowKey.length) < 0) this.advance(i);
    }
    this.winner = this.k === 0 ? -1 : this.k === 1 ? 0 : this.build(1);
  }

  next(): boolean {
    if (!this.started) {
      this.start();
    } else if (this.winner >= 0) {
      // Replace the winner by its reader's next entry and replay its path to the root.
      let w = this.winner;
      this.advance(w);
      const tree = this.tree;
      for (let node = (w + this.k) >> 1; node >= 1; node >>= 1) {
        const t = tree[node];
        if (this.before(t, w)) {
          tree[node] = w;
          w = t;
        }
      }
      this.winner = w;
    }
    const w = this.winner;
    if (w < 0 || this.prefixHigh[w] === Infinity) return this.end();
    const h = this.prefixHigh[w];
    const l = this.prefixLow[w];
    const r = this.readers[w];
    const boundKey = this.highBoundKey;
    if (boundKey !== null) {
      const hb = this.highBoundPrefixHigh;
      const lb = this.highBoundPrefixLow;
      if (h > hb || (h === hb && (l > lb || (l === lb && compareRanges(r.buf, r.keyStart, r.keyEnd, boundKey, 0, boundKey.length) >= 0))))
        return this.end();
    }
    this.current = r;
    this.currentPrefixHigh = h;
    this.currentPrefixLow = l;
    return true;
  }

  private end(): boolean {
    this.current = null;
    this.winner = -1;
    return false;
  }

  /** The run readers, in run order (a resumable merge raises their punch limits). */
  get runReaders(): readonly RunReader[] {
    return this.readers;
  }

  close(): void {
    for (const r of this.readers) r.close();
  }
}
