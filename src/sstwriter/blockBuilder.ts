/**
 * Block builder: lays out one key/value block (data, index, metaindex, properties, range_del)
 * in RocksDB's generic block format.
 *
 * On disk:
 *   entry_0 … entry_{n-1} ‖ restart_0 … restart_{r-1} (u32le offsets) ‖ u32le r
 *   entry = varint32 shared ‖ varint32 non_shared ‖ [varint32 value_length] ‖ key[shared:] ‖ value
 * An entry at a restart point stores its whole key (shared = 0) and its offset is listed in the
 * restart array, so a reader can binary-search restarts and then scan forward. A new restart
 * point starts every `restartInterval` entries; between restarts each key stores only the bytes
 * after its longest common prefix with the previous key.
 *
 * Value-delta mode (`valueDeltaEncoding`, used by format_version >= 4 index blocks): entries
 * carry no value_length, and an entry with shared > 0 stores the caller's `deltaValue` instead
 * of `value` (readers know the previous entry's value, so the delta is enough).
 *
 * Contract:
 * - `add` copies the key and value; the caller may reuse its buffers right away.
 * - If `keyOrder` is given, every key must compare greater than the previous one (asserted).
 * - `finish()` returns a view of the internal buffer that stays valid until `reset()`; after
 *   `finish()` only `reset()` may be called. An empty block finishes to 8 bytes (one restart
 *   at offset 0 and r = 1), exactly as RocksDB writes it.
 * - `currentSizeEstimate()` / `estimatedSizeAfter()` reproduce RocksDB's arithmetic exactly,
 *   because the data-block cut rule depends on them and output must be byte-identical.
 *
 * Limits: a block may not exceed MAX_BLOCK_BYTES, because restart offsets are u32 and RocksDB
 * refuses to compress (and Node Buffers cannot hold) anything near 2^32.
 *
 * Written twice: the import's native merge lays out its data blocks itself (native/mergeBlocks.c,
 * `append` and `finish_block`, for user key | type 1 | sequence 0 entries, no value delta). A
 * change to the layout here must be made there too; test/ingest/sort/nativeDataBlock.test.ts
 * checks that both give the same bytes for the same entries.
 */
import { ByteSink, MAX_VARINT32_BYTES, varintLength, writeVarint } from '../util/coding';
import { assert } from '../util/errors';
import { copyBytes } from '../util/byteRanges';

/** Hard size limit of one block's contents, in bytes (restart offsets are u32le). */
export const MAX_BLOCK_BYTES = 0x7fffffff;

/** Restart interval that gives a single restart point (RocksDB's properties block). */
export const SINGLE_RESTART_INTERVAL = 0x7fffffff;

const U32_BYTES = 4;
/** What RocksDB's size estimate charges for the `shared` varint, whatever its real length. */
const ESTIMATED_SHARED_VARINT_BYTES = 4;

export interface BlockBuilderOptions {
  /** Entries per restart point (>= 1). */
  restartInterval: number;
  /** Omit value lengths and store `deltaValue` for entries with shared > 0 (fv >= 4 index). */
  valueDeltaEncoding?: boolean;
  /** If given, keys must be strictly increasing under this order (asserted on every add). */
  keyOrder?: (a: Uint8Array, b: Uint8Array) => number;
  /** Initial capacity of the entry buffer, in bytes. */
  initialCapacityBytes?: number;
}

export class BlockBuilder {
  private readonly restartInterval: number;
  private readonly valueDeltaEncoding: boolean;
  private readonly keyOrder: ((a: Uint8Array, b: Uint8Array) => number) | undefined;
  private readonly entries: ByteSink;
  /** Offsets of restart entries in restarts[0, restartCount); restarts[0] = 0 always. */
  private restarts = new Uint32Array(16);
  private restartCount = 1;
  /** Entries since the last restart point. */
  private counter = 0;
  private entryCount = 0;
  private finished = false;
  /** Copy of the previous key (for prefix sharing and order checks), valid in [0, lastKeyLength). */
  private lastKeyBuf: Buffer;
  private lastKeyLength = 0;
  /** lastKeyBuf[0, lastKeyLength) as a view, rebuilt only when the length or buffer changes. */
  private lastKeyView: Buffer;

  constructor(options: BlockBuilderOptions) {
    assert(
      Number.isInteger(options.restartInterval) && options.restartInterval >= 1,
      `restart interval ${options.restartInterval} must be a positive integer`,
    );
    this.restartInterval = options.restartInterval;
    this.valueDeltaEncoding = options.valueDeltaEncoding ?? false;
    this.keyOrder = options.keyOrder;
    this.entries = new ByteSink(options.initialCapacityBytes ?? 4096, MAX_BLOCK_BYTES);
    this.lastKeyBuf = Buffer.allocUnsafe(64);
    this.lastKeyView = this.lastKeyBuf.subarray(0, 0);
  }

  /**
   * Appends an entry. In value-delta mode, `deltaValue` (defaulting to `value`) is stored instead
   * of `value` whenever the key shares a prefix with the previous key.
   */
  add(key: Uint8Array, value: Uint8Array, deltaValue: Uint8Array = value): void {
    // Computed at restart points too: the key copy kept for the next entry reuses the prefix.
    this.addWithKnownPrefix(key, value, commonPrefixLength(this.lastKeyBuf, this.lastKeyLength, key), deltaValue);
  }

  /**
   * add() for a caller that has already computed `prefix`, the length of the common prefix of
   * `key` and lastKey() (0 when the block is empty), e.g. for its own key-order check; it saves
   * a second pass over the key. A wrong prefix corrupts the block, so it is bounds-checked.
   */
  addWithKnownPrefix(key: Uint8Array, value: Uint8Array, prefix: number, deltaValue: Uint8Array = value): void {
    if (this.finished) assert(false, 'add() after finish() without reset()');
    if (!(prefix >= 0 && prefix <= key.length && prefix <= this.lastKeyLength)) assert(false, 'shared prefix out of range');
    if (this.keyOrder !== undefined && this.entryCount > 0) {
      assert(this.keyOrder(this.lastKeyView, key) < 0, 'block keys must be added in strictly increasing order');
    }
    let shared = prefix;
    if (this.counter >= this.restartInterval) {
      if (this.restartCount === this.restarts.length) {
        const grown = new Uint32Array(2 * this.restarts.length);
        grown.set(this.restarts);
        this.restarts = grown;
      }
      this.restarts[this.restartCount++] = this.entries.length;
      this.counter = 0;
      shared = 0;
    }
    const keyBytes = key.length;
    const nonShared = keyBytes - shared;
    const storedValue = this.valueDeltaEncoding && shared > 0 ? deltaValue : value;
    const valueBytes = storedValue.length;

    // Encode straight into the sink's buffer: this runs once per key, so no views are created.
    const sink = this.entries;
    sink.reserve(3 * MAX_VARINT32_BYTES + nonShared + valueBytes);
    const buf = sink.buf;
    let pos = sink.length;
    // Most entries have short keys and values: one-byte varints, written without a call.
    if ((shared | nonShared | valueBytes) < 0x80) {
      buf[pos++] = shared;
      buf[pos++] = nonShared;
      if (!this.valueDeltaEncoding) buf[pos++] = valueBytes;
    } else {
      pos = writeVarint(buf, pos, shared);
      pos = writeVarint(buf, pos, nonShared);
      if (!this.valueDeltaEncoding) pos = writeVarint(buf, pos, valueBytes);
    }
    pos = copyBytes(key, shared, keyBytes, buf, pos);
    pos = copyBytes(storedValue, 0, valueBytes, buf, pos);
    sink.length = pos;

    this.rememberKey(key, prefix);
    this.counter++;
    this.entryCount++;
  }

  /** Bytes of entries written so far (the offset the next entry would start at). */
  entriesSizeBytes(): number {
    return this.entries.length;
  }

  /** Size in bytes the block would have if finished now. */
  currentSizeEstimate(): number {
    return this.entries.length + U32_BYTES * this.restartCount + U32_BYTES;
  }

  /**
   * RocksDB's over-estimate of the finished size after adding (key, value): it charges the whole
   * key plus 4 bytes for the `shared` varint, because computing the real prefix costs a compare.
   * In value-delta mode a non-restart value is guessed at half its full length.
   */
  estimatedSizeAfter(key: Uint8Array, value: Uint8Array): number {
    return this.estimatedSizeAfterLengths(key.length, value.length);
  }

  estimatedSizeAfterLengths(keyBytes: number, valueBytes: number): number {
    const startsRestart = this.counter >= this.restartInterval;
    let estimate = this.currentSizeEstimate() + keyBytes;
    if (!this.valueDeltaEncoding || startsRestart) {
      estimate += valueBytes + varintLength(valueBytes);
    } else {
      estimate += Math.floor(valueBytes / 2);
    }
    if (startsRestart) estimate += U32_BYTES;
    estimate += ESTIMATED_SHARED_VARINT_BYTES + varintLength(keyBytes);
    return estimate;
  }

  /** Appends the restart array and footer word; returns the block contents (a view). */
  finish(): Buffer {
    assert(!this.finished, 'finish() called twice');
    const sink = this.entries;
    sink.reserve(U32_BYTES * (this.restartCount + 1));
    for (let i = 0; i < this.restartCount; i++) sink.putFixed32(this.restarts[i]);
    sink.putFixed32(this.restartCount);
    this.finished = true;
    return sink.view();
  }

  reset(): void {
    this.entries.clear();
    this.restartCount = 1; // keeps restarts[0] = 0
    this.counter = 0;
    this.entryCount = 0;
    this.lastKeyLength = 0;
    this.lastKeyView = this.lastKeyBuf.subarray(0, 0);
    this.finished = false;
  }

  empty(): boolean {
    return this.entryCount === 0;
  }

  numEntries(): number {
    return this.entryCount;
  }

  /** The last key added (a view; its contents change with the next add or reset). */
  lastKey(): Buffer {
    return this.lastKeyView;
  }

  /** Keeps a copy of `key`, whose first `prefix` bytes equal the previous key's. */
  private rememberKey(key: Uint8Array, prefix: number): void {
    const keyBytes = key.length;
    let reallocated = false;
    if (keyBytes > this.lastKeyBuf.length) {
      this.lastKeyBuf = Buffer.allocUnsafe(Math.max(keyBytes, 2 * this.lastKeyBuf.length));
      reallocated = true;
      prefix = 0;
    }
    copyBytes(key, prefix, keyBytes, this.lastKeyBuf, prefix);
    if (reallocated || keyBytes !== this.lastKeyLength) this.lastKeyView = this.lastKeyBuf.subarray(0, keyBytes);
    this.lastKeyLength = keyBytes;
  }
}

/** Length of the common prefix of `a[0, aLength)` and `b`. */
export function commonPrefixLength(a: Uint8Array, aLength: number, b: Uint8Array): number {
  const n = aLength < b.length ? aLength : b.length;
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
