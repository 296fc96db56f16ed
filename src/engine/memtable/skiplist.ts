/**
 * An arena-backed skiplist of (internal key, value) entries in internal-key order: the memtable's
 * index.
 *
 * Storage: one growable arena (an ArrayBuffer seen as bytes and as u32 words). Each node is laid
 * out contiguously, 4-byte aligned, at its node offset:
 *
 *   u32 key length ‖ u32 value length ‖ u32 height ‖ u32 next[height] ‖ key bytes ‖ value bytes
 *
 * A node is named by its byte offset; `next` links hold offsets, 0 meaning none (offset 0 is the
 * head node, which is never a successor). A search step reads a link and then the header and key
 * of the node it points at, which sit in the same few cache lines, instead of chasing separate
 * objects; an insert allocates no JavaScript objects; and the garbage collector sees one buffer
 * however many entries there are. The arena doubles when full (copying), so node offsets stay
 * valid; views handed out earlier keep the old buffer alive and stay correct because entries
 * never change once written.
 *
 * Contract: entries are never removed or changed, so a cursor (a node offset) stays valid while
 * inserts continue; the engine inserts from one thread and never inserts the same internal key
 * twice (asserted). Inserting keys in ascending order (bulk loads, sequential writes) costs one
 * or two comparisons, via the remembered splice of the previous insert, instead of a search.
 * Searches count perf.keyComparisons.
 *
 * The searches (lastBefore, findSplice) run natively when the addon is in use
 * (src/engine/memtable/nativeSkiplist.ts): the same walk, step for step and comparison for
 * comparison, over the same arena, as one call instead of about 20 JavaScript steps.
 */
import { assert, assertionFailed } from '../../util/errors';
import { TRAILER_BYTES, writeTrailer } from '../../base/internalKey';
import { compareInternalKeyRanges } from '../../base/keyCompare';
import { perf } from '../../base/perfContext';
import { nativeSkiplist, SKIPLIST_KEY_PRESENT } from './nativeSkiplist';

export const MAX_HEIGHT = 12;
/** 1 in BRANCHING nodes of height h also get height h+1 (RocksDB's and LevelDB's choice). */
const BRANCHING = 4;
const NONE = 0;
const HEAD = 0;
/** Header words before the links: key length, value length, height. */
const HEADER_WORDS = 3;
export const INITIAL_ARENA_BYTES = 16 * 1024;
/** Node offsets are kept in u32 words and compared as numbers; stay well inside that. */
export const MAX_ARENA_BYTES = 2 ** 31;
/** The native searches' comparison counter (one per thread: this module is loaded per thread). */
const nativeCounters = new Float64Array(1);

export class SkipList {
  private bytes: Buffer;
  private words: Uint32Array;
  /** Bytes of the arena in use (the next node's offset). */
  private used = 0;
  private count_ = 0;
  private heightInUse = 1;
  private rngState: number;

  /** Predecessors of the last inserted node at every level, and that node (the splice). */
  private readonly splice = new Uint32Array(MAX_HEIGHT);
  private lastInserted = NONE;
  private readonly prevScratch = new Uint32Array(MAX_HEIGHT);

  constructor(opts: { initialArenaBytes?: number; seed?: number } = {}) {
    const initial = Math.max(1024, opts.initialArenaBytes ?? INITIAL_ARENA_BYTES);
    const ab = new ArrayBuffer(initial - (initial % 4));
    this.bytes = Buffer.from(ab);
    this.words = new Uint32Array(ab);
    this.rngState = (opts.seed ?? 0x9e3779b9) >>> 0 || 1;
    this.allocNode(MAX_HEIGHT, 0, 0); // the head
  }

  /** Entries, not counting the head. */
  get count(): number {
    return this.count_;
  }

  /** Arena bytes in use (nodes, links, keys and values): what the memtable counts against its budget. */
  get memoryUsageBytes(): number {
    return this.used;
  }

  /**
   * Inserts `userKey ‖ trailer(seq, type) → value`. The key bytes are laid out in the arena
   * first, so the search compares in place without building a key Buffer.
   */
  insert(userKey: Uint8Array, seq: number, type: number, value: Uint8Array): void {
    const keyLength = userKey.length + TRAILER_BYTES;
    const height = this.randomHeight();
    const node = this.allocNode(height, keyLength, value.length);
    const keyStart = node + 4 * (HEADER_WORDS + height);
    const bytes = this.bytes;
    bytes.set(userKey, keyStart);
    writeTrailer(bytes, keyStart + userKey.length, seq, type);
    bytes.set(value, keyStart + keyLength);

    const prev = this.prevScratch;
    if (!this.trySpliceAfterLast(keyStart, keyLength, prev)) this.findSplice(keyStart, keyLength, prev);
    if (height > this.heightInUse) {
      for (let i = this.heightInUse; i < height; i++) prev[i] = HEAD;
      this.heightInUse = height;
    }
    const words = this.words;
    const nodeLinks = (node >>> 2) + HEADER_WORDS;
    for (let i = 0; i < height; i++) {
      const p = (prev[i] >>> 2) + HEADER_WORDS + i;
      words[nodeLinks + i] = words[p];
      words[p] = node;
    }
    this.splice.set(prev);
    this.lastInserted = node;
    this.count_++;
  }

  // ---- navigation (node offsets; NONE = 0 means "no such node") ----

  firstNode(): number {
    return this.words[HEADER_WORDS];
  }

  nextNode(node: number): number {
    return this.words[(node >>> 2) + HEADER_WORDS];
  }

  /** First node with key >= target (by internal-key order), or NONE. */
  seekGE(target: Buffer): number {
    const x = this.lastBefore(target, 0, target.length);
    return this.words[(x >>> 2) + HEADER_WORDS];
  }

  /** Last node with key < target, or NONE. */
  seekLT(target: Buffer): number {
    return this.lastBefore(target, 0, target.length);
  }

  lastNode(): number {
    const words = this.words;
    let x = HEAD;
    for (let level = this.heightInUse - 1; level >= 0; level--) {
      for (;;) {
        const next = words[(x >>> 2) + HEADER_WORDS + level];
        if (next === NONE) break;
        x = next;
      }
    }
    return x;
  }

  /** The node before `node`, found by search (a skiplist has no back links), or NONE. */
  prevNode(node: number): number {
    return this.lastBefore(this.bytes, this.keyStart(node), this.words[node >>> 2]);
  }

  /** Compares the node's key with target[start, start+length); counts one key comparison. */
  compareNode(node: number, target: Buffer, start: number, length: number): number {
    perf.keyComparisons++;
    return compareInternalKeyRanges(this.bytes, this.keyStart(node), this.words[node >>> 2], target, start, length);
  }

  /** The node's internal key, as a view into the arena. */
  key(node: number): Buffer {
    const start = this.keyStart(node);
    return this.bytes.subarray(start, start + this.words[node >>> 2]);
  }

  value(node: number): Buffer {
    const w = node >>> 2;
    const start = this.keyStart(node) + this.words[w];
    return this.bytes.subarray(start, start + this.words[w + 1]);
  }

  // ---- internals ----

  private keyStart(node: number): number {
    return node + 4 * (HEADER_WORDS + this.words[(node >>> 2) + 2]);
  }

  /**
   * Last node whose key is < target[start, start+length) (HEAD if none). A node that stopped the
   * walk at one level is not compared again when it is also the next node one level down.
   */
  private lastBefore(target: Buffer, start: number, length: number): number {
    if (nativeSkiplist !== null && length >= TRAILER_BYTES) {
      nativeCounters[0] = 0;
      const x = nativeSkiplist.skiplistLastBefore(this.bytes, this.heightInUse, target, start, length, nativeCounters);
      perf.keyComparisons += nativeCounters[0];
      if (x < 0) assertionFailed(`skiplist search met a node outside its ${this.used}-byte arena`);
      return x;
    }
    const words = this.words;
    let x = HEAD;
    let knownNotLess = NONE;
    for (let level = this.heightInUse - 1; level >= 0; level--) {
      for (;;) {
        const next = words[(x >>> 2) + HEADER_WORDS + level];
        if (next === NONE || next === knownNotLess || this.compareNode(next, target, start, length) >= 0) {
          knownNotLess = next;
          break;
        }
        x = next;
      }
    }
    return x;
  }

  /**
   * Fast path for ascending inserts: if the new key sorts right after the last inserted node,
   * that node and the splice remembered with it are the predecessors at every level (each
   * splice entry's successor at its level sorts after the last node, hence after the new key).
   */
  private trySpliceAfterLast(keyStart: number, keyLength: number, prev: Uint32Array): boolean {
    const last = this.lastInserted;
    if (last === NONE) return false;
    const c = this.compareNode(last, this.bytes, keyStart, keyLength);
    assert(c !== 0, 'skiplist insert of an internal key already present');
    if (c > 0) return false;
    const after = this.nextNode(last);
    if (after !== NONE) {
      const d = this.compareNode(after, this.bytes, keyStart, keyLength);
      assert(d !== 0, 'skiplist insert of an internal key already present');
      if (d < 0) return false;
    }
    const lastHeight = this.words[(last >>> 2) + 2];
    for (let i = 0; i < MAX_HEIGHT; i++) prev[i] = i < lastHeight ? last : this.splice[i];
    return true;
  }

  private findSplice(keyStart: number, keyLength: number, prev: Uint32Array): void {
    if (nativeSkiplist !== null) {
      nativeCounters[0] = 0;
      const r = nativeSkiplist.skiplistFindSplice(this.bytes, this.heightInUse, keyStart, keyLength, prev, nativeCounters);
      perf.keyComparisons += nativeCounters[0];
      if (r === SKIPLIST_KEY_PRESENT) assertionFailed('skiplist insert of an internal key already present');
      if (r !== 0) assertionFailed(`skiplist insert met a node outside its ${this.used}-byte arena`);
      return;
    }
    const words = this.words;
    let x = HEAD;
    let knownGreater = NONE;
    for (let level = MAX_HEIGHT - 1; level >= 0; level--) {
      if (level < this.heightInUse) {
        for (;;) {
          const next = words[(x >>> 2) + HEADER_WORDS + level];
          if (next === NONE || next === knownGreater) break;
          const c = this.compareNode(next, this.bytes, keyStart, keyLength);
          assert(c !== 0, 'skiplist insert of an internal key already present');
          if (c > 0) {
            knownGreater = next;
            break;
          }
          x = next;
        }
      }
      prev[level] = x;
    }
  }

  /** Reserves an aligned node of `height` links and `keyLength + valueLength` bytes; returns its offset. */
  private allocNode(height: number, keyLength: number, valueLength: number): number {
    const size = 4 * (HEADER_WORDS + height) + keyLength + valueLength;
    const aligned = (size + 3) & ~3;
    if (this.used + aligned > this.bytes.length) this.grow(this.used + aligned);
    const node = this.used;
    this.used += aligned;
    const w = node >>> 2;
    const words = this.words;
    words[w] = keyLength;
    words[w + 1] = valueLength;
    words[w + 2] = height;
    words.fill(NONE, w + HEADER_WORDS, w + HEADER_WORDS + height);
    return node;
  }

  private grow(needBytes: number): void {
    assert(needBytes <= MAX_ARENA_BYTES, `memtable arena would exceed ${MAX_ARENA_BYTES} bytes`);
    let capacity = this.bytes.length * 2;
    while (capacity < needBytes) capacity *= 2;
    capacity = Math.min(capacity, MAX_ARENA_BYTES);
    const ab = new ArrayBuffer(capacity);
    const bytes = Buffer.from(ab);
    bytes.set(this.bytes.subarray(0, this.used));
    this.bytes = bytes;
    this.words = new Uint32Array(ab);
  }

  private randomHeight(): number {
    let height = 1;
    while (height < MAX_HEIGHT && this.nextRandom() % BRANCHING === 0) height++;
    return height;
  }

  /** xorshift32: deterministic for a given seed, which keeps tests reproducible. */
  private nextRandom(): number {
    let x = this.rngState;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rngState = x >>> 0;
    return this.rngState;
  }
}
