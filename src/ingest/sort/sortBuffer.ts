/**
 * The in-memory half of the external sort: rows (key, value, source position) accumulate in one
 * byte arena plus typed-array columns, are sorted by key, and are handed out in order for
 * spilling as a run.
 *
 * Memory contract: what the buffer holds — arena bytes in use plus SORT_BYTES_PER_ENTRY for each
 * entry (index columns and radix scratch) — stays within `memoryLimitBytes`; when the next
 * entry would cross it, `reserve` says the buffer is full and the caller spills it. The arena
 * and the columns are allocated once at their largest size and never copied or regrown: large
 * allocations are mapped lazily by the OS, so only the bytes actually written become resident,
 * and there is never a moment with an old and a new copy alive (the resident peak is the limit).
 * Buffers are reused across runs, and advised to use huge pages where those are cheap (shouldAdviseHugePages).
 *
 * Layout: one Buffer (`arena`) holds, in this order, the parser's read window (windowBytes), the
 * spill chunk (chunkBytes) and the rows from `arenaStart` on, so the two copies every row takes
 * (window → rows, rows → spill chunk) are `copyWithin`s inside one Buffer (see src/util/copyRange.ts).
 * The window and chunk are not counted in memoryLimitBytes; the caller budgets them.
 * Entry e's key is arena[offset[e], offset[e] + keyLength[e]) and its value follows the
 * key directly (valueLength[e] bytes). source[e] / line[e] say where the row came from; the sort
 * keeps rows with equal keys in insertion order (it is stable), which is input order.
 *
 * Sort: most-significant-digit first in 8-byte chunks; each chunk is ordered by an LSD radix sort
 * over 11-bit digits of the chunk plus a "length class" digit (how many key bytes the chunk holds,
 * 0..8, or 9 = "more follow"), so a key that ends inside the chunk sorts before every longer key
 * with the same padded bytes. Groups equal in all of that and longer than the chunk recurse on the
 * next chunk; small ranges use a merge sort. Passes whose digit is the same for every entry are
 * skipped, so an int64 key range usually costs two or three passes. No comparator callbacks, no per-key
 * allocation.
 */
import { assert } from '../../util/errors';
import { BufferRegion } from '../csv/csvReader';
import { nativeImport } from '../nativeImport';
import { nativeUtil } from '../../util/nativeUtil';
import { NativeRowLayout } from '../rows/rowEncoder';
import { freePageReportingActive } from '../../util/pageReporting';

/** Bytes of typed-array state per entry slot: offset, keyLength, valueLength, source (4 each), line (8), six radix columns (4 each), two length classes (1 each). */
export const SORT_BYTES_PER_ENTRY = 4 * 4 + 8 + 6 * 4 + 2;
/** Smallest entry: an 8-byte key and no value; bounds how many entry slots the limit can need. */
const MIN_ENTRY_BYTES = 8;
/** Arena offsets are 32-bit. */
const MAX_ARENA_BYTES = 0xffffffff;
export const MIN_SORT_BUFFER_BYTES = 1 << 20;
export const DEFAULT_WINDOW_BYTES = 1 << 20;
export const DEFAULT_CHUNK_BYTES = 1 << 20;
/** Ranges up to this size are insertion-sorted. */
const INSERTION_SORT_MAX = 24;
/**
 * Ranges below this size are merge-sorted by comparison: the radix sort clears and scans
 * 7 × 2048 histogram slots, which only pays off for ranges well beyond a few thousand entries.
 */
const COMPARISON_SORT_MAX = 2048;
const CHUNK_BYTES = 8;
const DIGIT_BITS = 11;
const DIGIT_BUCKETS = 1 << DIGIT_BITS;
const DIGIT_MASK = DIGIT_BUCKETS - 1;
/** Length class, then three 11-bit digits per 32-bit word. */
const RADIX_PASSES = 7;
const MORE_FOLLOWS = 9;
/** Alignment of the line column (Float64) inside the columns' allocation. */
const COLUMN_ALIGNMENT_BYTES = 8;

/**
 * Whether a sort buffer asks for huge pages. Where the machine reports free memory to its host
 * (src/util/pageReporting.ts), the free 2 MiB blocks a huge page needs are the memory the host
 * has taken back, and faulting them in cost far more than 4 KiB pages on the 2-core VM: with
 * the advice, alternating runs of the benchmark's child took 0.941-0.977 s against 0.862-0.871 s
 * without it at 1M rows (two series of nine), 3.60 s against 2.33 s at 3M (five each, parse 1.93
 * against 0.70 s), and at 10M 4.85-12.60 s against 5.53-7.43 s (nine each: the advice won when
 * the memory had just been freed by another import, and lost by 5-6 s right after idle seconds).
 * Elsewhere the advice stays: it takes page faults down 512 times per 2 MiB. SST_INGEST_HUGE_PAGES
 * decides instead when set: "1" always, "0" never (both for comparisons).
 */
export function shouldAdviseHugePages(envValue: string | undefined, freePageReporting: boolean): boolean {
  if (envValue === '1') return true;
  if (envValue === '0') return false;
  return !freePageReporting;
}

export class SortBuffer {
  readonly memoryLimitBytes: number;
  /** Window, chunk and rows (see Layout). */
  arena: Buffer;
  readonly arenaStart: number;
  /** End of the rows in use (rows occupy arena[arenaStart, used)). */
  used: number;
  count = 0;
  offset: Uint32Array;
  keyLength: Uint32Array;
  valueLength: Uint32Array;
  source: Uint32Array;
  line: Float64Array;
  /** Entry numbers in sorted order after `sort()`, valid in [0, count). */
  order: Uint32Array;
  private chunkHigh: Uint32Array;
  private chunkLow: Uint32Array;
  private lengthClass: Uint8Array;
  private orderScratch: Uint32Array;
  private highScratch: Uint32Array;
  private lowScratch: Uint32Array;
  private classScratch: Uint8Array;
  /** After parseRows: the input position it stopped at. */
  parsedUpTo = 0;
  /** parseRows' in/out state [pos, line, count, used] and its limits [arenaStart, memoryLimitBytes, bytesPerEntry]. */
  private readonly parseState = new Float64Array(4);
  private readonly parseLimits: Float64Array;
  /** All of the columns above: one allocation. */
  private readonly columns: Uint8Array;
  /** Whether the arena and columns were advised for huge pages (adviseHugePages). */
  hugePagesAdvised = false;
  private readonly histogram = new Uint32Array(RADIX_PASSES * DIGIT_BUCKETS);
  /** Per radix pass: 1 when its digit differs between entries of the range being sorted. */
  private readonly passNeeded = new Uint8Array(RADIX_PASSES);

  constructor(
    memoryLimitBytes: number,
    private readonly windowBytes = DEFAULT_WINDOW_BYTES,
    chunkBytes = DEFAULT_CHUNK_BYTES,
  ) {
    assert(
      memoryLimitBytes >= MIN_SORT_BUFFER_BYTES,
      `sort buffer limit ${memoryLimitBytes} is below its minimum ${MIN_SORT_BUFFER_BYTES}`,
    );
    this.memoryLimitBytes = memoryLimitBytes;
    this.arenaStart = windowBytes + chunkBytes;
    this.parseLimits = Float64Array.of(this.arenaStart, memoryLimitBytes, SORT_BYTES_PER_ENTRY);
    this.used = this.arenaStart;
    this.arena = Buffer.allocUnsafe(this.arenaStart + Math.min(memoryLimitBytes, MAX_ARENA_BYTES - this.arenaStart));
    const slots = Math.floor(memoryLimitBytes / (SORT_BYTES_PER_ENTRY + MIN_ENTRY_BYTES));
    // Every column is a view of one allocation, so huge-page advice (adviseHugePages) covers all
    // but its first 2 MiB; separately, each column's first 2 MiB, the part a run of 500,000
    // entries mostly touches, fell outside the advice. highScratch comes first: it is the column
    // the sort uses least.
    const columns = new ArrayBuffer(slots * SORT_BYTES_PER_ENTRY + COLUMN_ALIGNMENT_BYTES);
    let at = 0;
    const u32 = (): Uint32Array => {
      const view = new Uint32Array(columns, at, slots);
      at += view.byteLength;
      return view;
    };
    const u8 = (): Uint8Array => {
      const view = new Uint8Array(columns, at, slots);
      at += view.byteLength;
      return view;
    };
    this.highScratch = u32();
    at = Math.ceil(at / COLUMN_ALIGNMENT_BYTES) * COLUMN_ALIGNMENT_BYTES;
    this.line = new Float64Array(columns, at, slots);
    at += this.line.byteLength;
    this.offset = u32();
    this.keyLength = u32();
    this.valueLength = u32();
    this.source = u32();
    this.order = u32();
    this.chunkHigh = u32();
    this.chunkLow = u32();
    this.orderScratch = u32();
    this.lowScratch = u32();
    this.lengthClass = u8();
    this.classScratch = u8();
    assert(at <= columns.byteLength, `sort buffer columns: ${at} bytes laid out in ${columns.byteLength}`);
    this.columns = new Uint8Array(columns);
    this.adviseHugePages();
  }

  /**
   * Asks for transparent huge pages on the arena and columns, before anything touches them, where
   * that is cheap (shouldAdviseHugePages): the buffer is then faulted in 2 MiB at a time instead
   * of 4 KiB. The cost: a touched huge page is resident whole, so each view may hold up to 2 MiB
   * more than it has written. Advice only; without the native codec, or where the kernel's THP
   * mode is "never", nothing changes.
   */
  private adviseHugePages(): void {
    this.hugePagesAdvised = nativeUtil !== null && shouldAdviseHugePages(process.env.SST_INGEST_HUGE_PAGES, freePageReportingActive());
    if (!this.hugePagesAdvised || nativeUtil === null) return;
    for (const v of this.views()) nativeUtil.adviseHugePages(v);
  }

  /** Bytes held now (what counts against the limit). */
  heldBytes(): number {
    return this.used - this.arenaStart + this.count * SORT_BYTES_PER_ENTRY;
  }

  /** The read window region, lent to the CSV reader. */
  windowRegion(): BufferRegion {
    return { buf: this.arena, start: 0, end: this.windowBytes };
  }

  /** The spill chunk region, lent to the run writer. */
  chunkRegion(): BufferRegion {
    return { buf: this.arena, start: this.windowBytes, end: this.arenaStart };
  }

  /**
   * Makes room for one more entry of up to `entryBytes` (key + value); returns false when the
   * buffer is full (spill it and call again; false on an empty buffer means the entry can never
   * fit). On true, write the entry at `arena[used]` and call `commit`.
   */
  reserve(entryBytes: number): boolean {
    return (
      this.count < this.offset.length &&
      this.used + entryBytes <= this.arena.length &&
      this.heldBytes() + entryBytes + SORT_BYTES_PER_ENTRY <= this.memoryLimitBytes
    );
  }

  /** Records the entry written at arena[used]: `keyBytes` of key then `valueBytes` of value. */
  commit(keyBytes: number, valueBytes: number, source: number, line: number): void {
    const e = this.count++;
    this.offset[e] = this.used;
    this.keyLength[e] = keyBytes;
    this.valueLength[e] = valueBytes;
    this.source[e] = source;
    this.line[e] = line;
    this.used += keyBytes + valueBytes;
  }

  /**
   * Takes records of src[.., end) from `pos` (on `line`) straight into the buffer through the
   * native CSV fast path (native/rowParse.c), for as long as each is simple, fits, and starts
   * before stopAt; returns how many it took (one line each) and leaves where it stopped in
   * `parsedUpTo`. The layout comes from RowEncoder.nativeLayout with the dialect and source
   * filled in. 0 without the native codec, or for positions past 32 bits.
   */
  parseRows(src: Buffer, end: number, stopAt: number, pos: number, line: number, rows: NativeRowLayout): number {
    const codec = nativeImport;
    if (codec === null || end > MAX_ARENA_BYTES) return 0;
    const state = this.parseState;
    state[0] = pos;
    state[1] = line;
    state[2] = this.count;
    state[3] = this.used;
    const taken = codec.parseRows(
      src,
      end,
      Math.min(stopAt, end),
      rows.layout,
      rows.valueFields,
      this.arena,
      this.parseLimits,
      this.offset,
      this.keyLength,
      this.valueLength,
      this.source,
      this.line,
      state,
    );
    this.count = state[2];
    this.used = state[3];
    this.parsedUpTo = state[0];
    return taken;
  }

  /**
   * Empties the buffer and gives its memory back to the kernel now (releasePages), for a buffer
   * that is done: a parse worker going on to merge. It stays usable (its pages fault in again).
   * Without the native codec only the collector frees it, when the buffer is dropped.
   */
  releaseMemory(): void {
    this.clear();
    if (nativeUtil === null) return;
    for (const v of this.views()) nativeUtil.releasePages(v);
  }

  /** The arena and the columns' allocation: what adviseHugePages and releaseMemory cover. */
  private views(): ArrayBufferView[] {
    return [this.arena, this.columns];
  }

  clear(): void {
    this.used = this.arenaStart;
    this.count = 0;
  }

  /**
   * Sorts the entries by key (stable); the result is `order[0 .. count)`. The native codec runs
   * the same algorithm over the same columns (native/rowSort.c): at 1M trade rows a parse
   * worker's sort took 120-180 ms here, since a loop run once per spill stays in V8's baseline
   * tier. Both paths are tested against each other (test/ingest/sortBuffer.test.ts).
   */
  sort(useNative = nativeImport !== null): void {
    if (useNative && nativeImport !== null) {
      nativeImport.sortEntries(
        this.arena,
        this.offset,
        this.keyLength,
        this.count,
        this.order,
        this.chunkHigh,
        this.chunkLow,
        this.lengthClass,
        this.orderScratch,
        this.highScratch,
        this.lowScratch,
        this.classScratch,
      );
      return;
    }
    const order = this.order;
    for (let i = 0; i < this.count; i++) order[i] = i;
    this.sortRange(0, this.count, 0);
  }

  /** Compares the keys of entries a and b from byte `depth` on. */
  compareEntries(a: number, b: number, depth: number): number {
    const arena = this.arena;
    const la = this.keyLength[a];
    const lb = this.keyLength[b];
    const oa = this.offset[a];
    const ob = this.offset[b];
    const n = la < lb ? la : lb;
    for (let i = depth; i < n; i++) {
      const d = arena[oa + i] - arena[ob + i];
      if (d !== 0) return d;
    }
    return la - lb;
  }

  /**
   * Sorts order[lo, hi) by key from byte `depth` on: small ranges by comparison; others by an LSD
   * radix sort on the 8-byte chunk at `depth` (loadChunk, countDigits, markNeededPasses,
   * radixPasses), then the groups equal on that chunk whose keys go on, by the next (sortGroups).
   */
  private sortRange(lo: number, hi: number, depth: number): void {
    const n = hi - lo;
    if (n < 2) return;
    if (n <= INSERTION_SORT_MAX) {
      this.insertionSort(lo, hi, depth);
      return;
    }
    if (n < COMPARISON_SORT_MAX) {
      this.mergeSort(lo, hi, depth);
      return;
    }
    this.loadChunk(lo, hi, depth);
    // The group step, and the columns it reads, only when some keys go on past this chunk.
    const groupsFollow = this.countDigits(lo, hi) > 1;
    this.markNeededPasses(lo, hi);
    this.radixPasses(lo, hi, groupsFollow);
    if (groupsFollow) this.sortGroups(lo, hi, depth);
  }

  /**
   * Fills chunkHigh, chunkLow and lengthClass at [lo, hi) with the 8-byte chunk at `depth` of
   * each entry's key (big-endian words, zero-padded) and its length class.
   */
  private loadChunk(lo: number, hi: number, depth: number): void {
    const arena = this.arena;
    const order = this.order;
    const high = this.chunkHigh;
    const low = this.chunkLow;
    const cls = this.lengthClass;
    for (let k = lo; k < hi; k++) {
      const e = order[k];
      const len = this.keyLength[e] - depth;
      const p = this.offset[e] + depth;
      let h = 0;
      let l = 0;
      if (len >= CHUNK_BYTES) {
        h = ((arena[p] << 24) | (arena[p + 1] << 16) | (arena[p + 2] << 8) | arena[p + 3]) >>> 0;
        l = ((arena[p + 4] << 24) | (arena[p + 5] << 16) | (arena[p + 6] << 8) | arena[p + 7]) >>> 0;
        cls[k] = len > CHUNK_BYTES ? MORE_FOLLOWS : CHUNK_BYTES;
      } else {
        for (let i = 0; i < len; i++) {
          const b = arena[p + i];
          if (i < 4) h |= b << (24 - 8 * i);
          else l |= b << (56 - 8 * i);
        }
        h >>>= 0;
        l >>>= 0;
        cls[k] = len > 0 ? len : 0;
      }
      high[k] = h;
      low[k] = l;
    }
  }

  /**
   * Counts the radix digits of [lo, hi) into `histogram`, all passes in one sweep: the length
   * class, then the low and the high word in 11-bit digits (2048 buckets keep the scatter's write
   * positions cache-resident, which 16-bit digits do not). Returns how many keys go on past the chunk.
   */
  private countDigits(lo: number, hi: number): number {
    const hist = this.histogram;
    const high = this.chunkHigh;
    const low = this.chunkLow;
    const cls = this.lengthClass;
    hist.fill(0);
    for (let k = lo; k < hi; k++) {
      const l = low[k];
      const h = high[k];
      hist[cls[k]]++;
      hist[DIGIT_BUCKETS + (l & DIGIT_MASK)]++;
      hist[2 * DIGIT_BUCKETS + ((l >>> DIGIT_BITS) & DIGIT_MASK)]++;
      hist[3 * DIGIT_BUCKETS + (l >>> (2 * DIGIT_BITS))]++;
      hist[4 * DIGIT_BUCKETS + (h & DIGIT_MASK)]++;
      hist[5 * DIGIT_BUCKETS + ((h >>> DIGIT_BITS) & DIGIT_MASK)]++;
      hist[6 * DIGIT_BUCKETS + (h >>> (2 * DIGIT_BITS))]++;
    }
    return hist[MORE_FOLLOWS];
  }

  /** Marks in passNeeded the passes whose digit is not the same for every entry of [lo, hi): the others order nothing. */
  private markNeededPasses(lo: number, hi: number): void {
    const hist = this.histogram;
    const cls = this.lengthClass[lo];
    const low = this.chunkLow[lo];
    const high = this.chunkHigh[lo];
    for (let pass = 0; pass < RADIX_PASSES; pass++) {
      this.passNeeded[pass] = hist[pass * DIGIT_BUCKETS + digit(pass, cls, low, high)] !== hi - lo ? 1 : 0;
    }
  }

  /**
   * The needed LSD passes over [lo, hi), least significant digit first (see countDigits), which
   * leave order[lo, hi) sorted by chunk and, when `groupsFollow`, the chunk columns in the same
   * order for sortGroups. A column is carried through a scatter only while something later reads
   * it: a later pass on its word, or the group step. For int64 keys that is usually three passes
   * over the low word, carrying just order and low.
   */
  private radixPasses(lo: number, hi: number, groupsFollow: boolean): void {
    const hist = this.histogram;
    const passNeeded = this.passNeeded;
    let lastLowPass = 0;
    let lastHighPass = 0;
    for (let pass = 1; pass < RADIX_PASSES; pass++) {
      if (passNeeded[pass] === 0) continue;
      if (pass <= 3) lastLowPass = pass;
      else lastHighPass = pass;
    }
    let order = this.order;
    let high = this.chunkHigh;
    let low = this.chunkLow;
    let cls = this.lengthClass;
    let oS = this.orderScratch;
    let hS = this.highScratch;
    let lS = this.lowScratch;
    let cS = this.classScratch;
    for (let pass = 0; pass < RADIX_PASSES; pass++) {
      if (passNeeded[pass] === 0) continue;
      const base = pass * DIGIT_BUCKETS;
      bucketStarts(hist, base, lo);
      const carryLow = groupsFollow || pass < lastLowPass;
      const carryHigh = groupsFollow || pass < lastHighPass;
      if (pass === 0) {
        for (let k = lo; k < hi; k++) {
          const to = hist[base + cls[k]]++;
          oS[to] = order[k];
          hS[to] = high[k];
          lS[to] = low[k];
          cS[to] = cls[k];
        }
        [cls, cS] = [cS, cls];
      } else {
        // The digit's word and shift are fixed for the pass: no per-entry branching on it.
        const word = pass <= 3 ? low : high;
        const shift = ((pass - 1) % 3) * DIGIT_BITS;
        for (let k = lo; k < hi; k++) {
          const to = hist[base + ((word[k] >>> shift) & DIGIT_MASK)]++;
          oS[to] = order[k];
          if (carryLow) lS[to] = low[k];
          if (carryHigh) hS[to] = high[k];
          if (groupsFollow) cS[to] = cls[k];
        }
        if (groupsFollow) [cls, cS] = [cS, cls];
      }
      [order, oS] = [oS, order];
      if (pass === 0 || carryLow) [low, lS] = [lS, low];
      if (pass === 0 || carryHigh) [high, hS] = [hS, high];
    }
    // The sorted range may sit in the scratch columns; bring home what is still valid and needed.
    if (order !== this.order) this.order.set(order.subarray(lo, hi), lo);
    if (!groupsFollow) return;
    if (high !== this.chunkHigh) this.chunkHigh.set(high.subarray(lo, hi), lo);
    if (low !== this.chunkLow) this.chunkLow.set(low.subarray(lo, hi), lo);
    if (cls !== this.lengthClass) this.lengthClass.set(cls.subarray(lo, hi), lo);
  }

  /** After radixPasses: orders each group of [lo, hi) equal on the chunk at `depth` whose keys go on, by the next chunk. */
  private sortGroups(lo: number, hi: number, depth: number): void {
    const high = this.chunkHigh;
    const low = this.chunkLow;
    const cls = this.lengthClass;
    let k = lo;
    while (k < hi) {
      let j = k + 1;
      if (cls[k] === MORE_FOLLOWS) {
        const h = high[k];
        const l = low[k];
        while (j < hi && high[j] === h && low[j] === l && cls[j] === MORE_FOLLOWS) j++;
        if (j - k > 1) this.sortRange(k, j, depth + CHUNK_BYTES);
      }
      k = j;
    }
  }

  /** Stable bottom-up merge sort of order[lo, hi) over insertion-sorted runs, using orderScratch. */
  private mergeSort(lo: number, hi: number, depth: number): void {
    for (let s = lo; s < hi; s += INSERTION_SORT_MAX) this.insertionSort(s, Math.min(s + INSERTION_SORT_MAX, hi), depth);
    let src = this.order;
    let dst = this.orderScratch;
    for (let width = INSERTION_SORT_MAX; width < hi - lo; width *= 2) {
      for (let s = lo; s < hi; s += 2 * width) {
        const mid = Math.min(s + width, hi);
        const end = Math.min(s + 2 * width, hi);
        let a = s;
        let b = mid;
        let o = s;
        while (a < mid && b < end) dst[o++] = this.compareEntries(src[b], src[a], depth) < 0 ? src[b++] : src[a++];
        while (a < mid) dst[o++] = src[a++];
        while (b < end) dst[o++] = src[b++];
      }
      [src, dst] = [dst, src];
    }
    if (src !== this.order) this.order.set(src.subarray(lo, hi), lo);
  }

  private insertionSort(lo: number, hi: number, depth: number): void {
    const order = this.order;
    for (let i = lo + 1; i < hi; i++) {
      const e = order[i];
      let j = i - 1;
      while (j >= lo && this.compareEntries(order[j], e, depth) > 0) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = e;
    }
  }
}

/** Turns the counts of histogram[base, base + DIGIT_BUCKETS) into each bucket's first position, from `lo`. */
function bucketStarts(hist: Uint32Array, base: number, lo: number): void {
  let sum = lo;
  for (let b = base; b < base + DIGIT_BUCKETS; b++) {
    const c = hist[b];
    hist[b] = sum;
    sum += c;
  }
}

/** Radix digit of pass 0..6: the length class, then 11-bit digits of the low word, then of the high word. */
function digit(pass: number, cls: number, low: number, high: number): number {
  if (pass === 0) return cls;
  const word = pass <= 3 ? low : high;
  return (word >>> (((pass - 1) % 3) * DIGIT_BITS)) & DIGIT_MASK;
}
