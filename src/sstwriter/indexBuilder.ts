/**
 * Index builder: one entry per data block, `separator → BlockHandle`, with RocksDB 7.8's
 * separator shortening and its format_version-dependent key and value encodings.
 *
 * Separators: for block i with last internal key L and next block's first internal key N, the
 * separator S satisfies L <= S < N. With RocksDB's default kShortenSeparators, S is the shortest
 * user key between the two (see `shortenSeparator`) followed by the seek trailer (max sequence,
 * type 0x16), or L itself when no shorter key exists. The last block's separator is its last key.
 *
 * On disk (an ordinary block, see blockBuilder.ts; restart interval index_block_restart_interval):
 *   fv <= 2: key = internal-key separator, value = BlockHandle (varint64 offset, varint64 size).
 *   fv 3:    key = user key of the separator, unless some block boundary has the same user key
 *            on both sides (then a user key cannot separate them and ALL keys stay internal keys;
 *            property rocksdb.index.key.is.user.key tells the reader which).
 *   fv >= 4: keys as fv 3; values have no length prefix, and an entry that shares a key prefix
 *            with the previous one stores only varsigned64(size - previous size) because the
 *            offset follows from the previous handle (data blocks are contiguous).
 * Because the user-key/internal-key choice is known only at the end, two blocks are built side
 * by side (as RocksDB does) and the user-key one is dropped as soon as it becomes unusable.
 */
import { BlockHandle, MAX_BLOCK_HANDLE_BYTES, MAX_VARINT64_BYTES, writeVarint, zigzagEncode } from '../util/coding';
import { assert } from '../util/errors';
import { BlockBuilder } from './blockBuilder';
import { compareByteRanges } from '../util/byteRanges';
import { BLOCK_TRAILER_BYTES } from '../sstable/checksum';
import { MAX_SEQUENCE_NUMBER, TRAILER_BYTES, ValueType, writeTrailer } from '../base/internalKey';

/**
 * RocksDB's BytewiseComparator::FindShortestSeparator: a user key S with
 * last <= S < next that is no longer than `last`, or null when there is none shorter/greater
 * than `last` itself. `next` must be greater than `last` or share its user key.
 */
export function shortenSeparator(last: Uint8Array, next: Uint8Array): Buffer | null {
  const minLength = Math.min(last.length, next.length);
  let d = 0;
  while (d < minLength && last[d] === next[d]) d++;
  if (d >= minLength) return null; // one is a prefix of the other
  const lastByte = last[d];
  const nextByte = next[d];
  if (lastByte >= nextByte) return null;
  if (d < next.length - 1 || lastByte + 1 < nextByte) {
    // Bumping byte d keeps the candidate below `next`: either bytes follow in `next`, or there
    // is room between the two bytes.
    const out = Buffer.from(last.subarray(0, d + 1));
    out[d]++;
    return out;
  }
  // Byte d can only go up by one and it is next's last byte, so bumping it would reach `next`.
  // Keep byte d and bump the first byte after it in `last` that is not 0xFF.
  for (let i = d + 1; i < last.length; i++) {
    if (last[i] < 0xff) {
      const out = Buffer.from(last.subarray(0, i + 1));
      out[i]++;
      return out;
    }
  }
  return null;
}

/**
 * The index separator between internal keys `last` and `next` (InternalKeyComparator's rule):
 * the shortened user key with the seek trailer if it is not longer than last's user key and
 * greater than it, else a copy of `last`.
 */
export function indexSeparator(last: Uint8Array, next: Uint8Array): Buffer {
  const lastUser = last.subarray(0, last.length - TRAILER_BYTES);
  const nextUser = next.subarray(0, next.length - TRAILER_BYTES);
  const shortened = shortenSeparator(lastUser, nextUser);
  if (shortened !== null && shortened.length <= lastUser.length && Buffer.compare(lastUser, shortened) < 0) {
    const out = Buffer.allocUnsafe(shortened.length + TRAILER_BYTES);
    shortened.copy(out, 0);
    writeTrailer(out, shortened.length, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    return out;
  }
  return Buffer.from(last);
}

/** The key side of an index entry, fixed when a data block is cut. */
export interface PreparedIndexKey {
  /** Internal-key separator (an owned copy). */
  separator: Buffer;
  /** The block's last key and the next block's first key share a user key (fv >= 3 then needs internal keys). */
  boundarySplitsUserKey: boolean;
}

/**
 * The index key of a block whose last key is `lastKeyInBlock`, given the first key of the next
 * block (null for the last block, which is indexed by its own last key). Copies what it keeps.
 */
export function prepareIndexKey(lastKeyInBlock: Uint8Array, firstKeyInNextBlock: Uint8Array | null): PreparedIndexKey {
  if (firstKeyInNextBlock === null) return { separator: Buffer.from(lastKeyInBlock), boundarySplitsUserKey: false };
  const lastUserBytes = lastKeyInBlock.length - TRAILER_BYTES;
  const nextUserBytes = firstKeyInNextBlock.length - TRAILER_BYTES;
  return {
    separator: indexSeparator(lastKeyInBlock, firstKeyInNextBlock),
    boundarySplitsUserKey: compareByteRanges(lastKeyInBlock, lastUserBytes, firstKeyInNextBlock, nextUserBytes) === 0,
  };
}

export interface IndexBuilderOptions {
  formatVersion: number;
  /** index_block_restart_interval (RocksDB default 1). */
  restartInterval: number;
}

export interface FinishedIndex {
  /** The index block contents (a view valid until the builder is reset or dropped). */
  contents: Buffer;
  /** Value of rocksdb.index.key.is.user.key. */
  keyIsUserKey: boolean;
  /** Value of rocksdb.index.value.is.delta.encoded. */
  valueIsDeltaEncoded: boolean;
}

export class IndexBuilder {
  private readonly internalKeyBlock: BlockBuilder;
  /** Null for fv <= 2, or once a boundary with equal user keys was seen. */
  private userKeyBlock: BlockBuilder | null;
  private readonly deltaValues: boolean;
  private readonly handleScratch = Buffer.allocUnsafe(MAX_BLOCK_HANDLE_BYTES);
  private readonly deltaScratch = Buffer.allocUnsafe(MAX_VARINT64_BYTES);
  private previousHandleSizeBytes = 0;
  private previousHandleEnd = -1;
  private finished = false;

  constructor(options: IndexBuilderOptions) {
    const fv = options.formatVersion;
    this.deltaValues = fv >= 4;
    this.internalKeyBlock = new BlockBuilder({ restartInterval: options.restartInterval, valueDeltaEncoding: this.deltaValues });
    this.userKeyBlock =
      fv >= 3 ? new BlockBuilder({ restartInterval: options.restartInterval, valueDeltaEncoding: this.deltaValues }) : null;
  }

  /**
   * Adds the entry of a finished data block. `firstKeyInNextBlock` is null for the last block,
   * which is indexed by its own last key. Handles must be added in file order and be contiguous
   * (each block starts right after the previous block's trailer).
   */
  addIndexEntry(lastKeyInBlock: Uint8Array, firstKeyInNextBlock: Uint8Array | null, handle: BlockHandle): void {
    this.addPreparedEntry(prepareIndexKey(lastKeyInBlock, firstKeyInNextBlock), handle);
  }

  /**
   * Adds an entry whose key was prepared when its block was cut (see prepareIndexKey), for
   * writers that learn a block's handle only after it has been compressed.
   */
  addPreparedEntry(key: PreparedIndexKey, handle: BlockHandle): void {
    assert(!this.finished, 'addIndexEntry() after finish()');
    if (this.previousHandleEnd >= 0 && handle.offset !== this.previousHandleEnd) {
      assert(false, `index handle offset ${handle.offset} does not follow the previous block (ends at ${this.previousHandleEnd})`);
    }
    if (key.boundarySplitsUserKey) this.userKeyBlock = null;
    const separator = key.separator;

    const fullLength = writeVarint(this.handleScratch, writeVarint(this.handleScratch, 0, handle.offset), handle.size);
    const full = this.handleScratch.subarray(0, fullLength);
    let delta = full;
    if (this.deltaValues) {
      const deltaLength = writeVarint(this.deltaScratch, 0, zigzagEncode(handle.size - this.previousHandleSizeBytes));
      delta = this.deltaScratch.subarray(0, deltaLength);
    }
    this.internalKeyBlock.add(separator, full, delta);
    if (this.userKeyBlock !== null) this.userKeyBlock.add(separator.subarray(0, separator.length - TRAILER_BYTES), full, delta);
    this.previousHandleSizeBytes = handle.size;
    this.previousHandleEnd = handle.offset + handle.size + BLOCK_TRAILER_BYTES;
  }

  numEntries(): number {
    return this.internalKeyBlock.numEntries();
  }

  /** Size the index block would have if finished now, in bytes (for output-size estimates). */
  currentSizeEstimate(): number {
    return (this.userKeyBlock ?? this.internalKeyBlock).currentSizeEstimate();
  }

  finish(): FinishedIndex {
    assert(!this.finished, 'index finish() called twice');
    this.finished = true;
    const keyIsUserKey = this.userKeyBlock !== null;
    const contents = (this.userKeyBlock ?? this.internalKeyBlock).finish();
    return { contents, keyIsUserKey, valueIsDeltaEncoded: this.deltaValues };
  }
}
