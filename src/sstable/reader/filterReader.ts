/**
 * Reads a full filter block (`fullfilter.*` in the metaindex) of a RocksDB 7.8 table, or one
 * partition of a partitioned filter: answers "may this user key be in the table?".
 *
 * Contract: `FilterReader.fromBlock(contents)` takes the block contents without the 5-byte block
 * trailer and keeps a reference to them (no copy; the caller must not reuse the buffer). It never
 * throws: a filter is only an optimisation, so anything it cannot interpret becomes a reader
 * that answers "maybe" for every key, which is always correct and merely costs a block read.
 * `keyMayMatch` returns false only when the key is certainly absent.
 *
 * Recognition, from the 5 metadata bytes at the end (layouts in sstwriter/filterBuilder.ts):
 *
 *   length <= 5                      no keys were added: every key is absent ('alwaysFalse')
 *   byte[-5] in 1..127 (int8 > 0)    legacy Bloom: byte[-5] = probes, u32le byte[-4..] = lines
 *   byte[-5] = 0xFF, byte[-4] = 0    FastLocalBloom; byte[-3] = probes | (log2(line) - 6) << 5,
 *                                    byte[-2..-1] reserved = 0
 *   byte[-5] = 0xFE                  Ribbon: not implemented here, so 'alwaysTrue'
 *   anything else                    reserved for future formats: 'alwaysTrue'
 *
 * Legacy filters carry the cache-line size of the machine that wrote them (64 on x86-64, 128 on
 * some other CPUs), so the line size is derived as len / lines and must be a power of two.
 *
 * Structurally impossible filters also become 'alwaysTrue' rather than errors: legacy with
 * lines = 0 or len not a power-of-two multiple of lines, FastLocalBloom with zero probes,
 * non-zero reserved bytes, a line size other than 64, or fewer than 64 bytes of bits (a builder
 * with at least one key never writes that; probing it would read past the bits). RocksDB treats
 * the same shapes as "always maybe" (or cannot read them safely), and failing the whole table
 * read over a damaged optional block would turn a performance aid into an outage; the block's
 * checksum is what detects corruption.
 */
import { nativeSearch } from './nativeSearch';
import { hash32, LEGACY_BLOOM_HASH_SEED, xxph3, xxph3Result } from '../hash';
import {
  CACHE_LINE_BYTES,
  FAST_LOCAL_BLOOM_SUB_IMPL,
  FILTER_METADATA_BYTES,
  NEW_BLOOM_MARKER,
  RIBBON_MARKER,
  fastLocalBloomHashMayMatch,
  legacyHashMayMatch,
} from '../bloomFilter';

export type FilterKind = 'legacy' | 'fastLocalBloom' | 'alwaysTrue' | 'alwaysFalse';

/** Largest log2 line size a legacy filter can have: len < 2^32 and lines >= 1. */
const MAX_LOG2_LINE_BYTES = 31;

export class FilterReader {
  /** Why an 'alwaysTrue' reader answers "maybe" for everything; empty for the other kinds. */
  readonly reason: string;

  private constructor(
    readonly kind: FilterKind,
    private readonly bits: Buffer,
    /** Bytes of bits, metadata excluded. */
    private readonly lengthBytes: number,
    readonly numProbes: number,
    /** Legacy only. */
    private readonly numLines: number,
    private readonly log2LineBytes: number,
    reason = '',
  ) {
    this.reason = reason;
  }

  private static alwaysTrue(contents: Buffer, reason: string): FilterReader {
    return new FilterReader('alwaysTrue', contents, 0, 0, 0, 0, reason);
  }

  static fromBlock(contents: Buffer): FilterReader {
    const total = contents.length;
    if (total <= FILTER_METADATA_BYTES) return new FilterReader('alwaysFalse', contents, 0, 0, 0, 0);
    const lengthBytes = total - FILTER_METADATA_BYTES;
    const marker = contents[lengthBytes];

    if (marker >= 1 && marker <= 127) {
      const numLines = contents.readUInt32LE(lengthBytes + 1);
      const log2LineBytes = legacyLog2LineBytes(lengthBytes, numLines);
      if (log2LineBytes < 0) {
        return FilterReader.alwaysTrue(contents, `legacy Bloom of ${lengthBytes} bytes cannot have ${numLines} lines`);
      }
      return new FilterReader('legacy', contents, lengthBytes, marker, numLines, log2LineBytes);
    }

    if (marker === NEW_BLOOM_MARKER) {
      const subImpl = contents[lengthBytes + 1];
      const probesAndLine = contents[lengthBytes + 2];
      const numProbes = probesAndLine & 0x1f;
      const log2LineBytes = (probesAndLine >>> 5) + 6;
      const reserved = contents.readUInt16LE(lengthBytes + 3);
      if (subImpl !== FAST_LOCAL_BLOOM_SUB_IMPL) return FilterReader.alwaysTrue(contents, `unknown Bloom variant ${subImpl}`);
      if (numProbes === 0 || reserved !== 0) {
        return FilterReader.alwaysTrue(contents, 'FastLocalBloom with zero probes or non-zero reserved bytes');
      }
      if (2 ** log2LineBytes !== CACHE_LINE_BYTES) {
        return FilterReader.alwaysTrue(contents, `FastLocalBloom with ${2 ** log2LineBytes}-byte lines`);
      }
      if (lengthBytes < CACHE_LINE_BYTES) {
        return FilterReader.alwaysTrue(contents, `FastLocalBloom of ${lengthBytes} bytes, less than one line`);
      }
      return new FilterReader('fastLocalBloom', contents, lengthBytes, numProbes, 0, log2LineBytes);
    }

    if (marker === RIBBON_MARKER) return FilterReader.alwaysTrue(contents, 'Ribbon filter (not implemented)');
    return FilterReader.alwaysTrue(contents, `reserved filter marker 0x${marker.toString(16)}`);
  }

  /** False only if `userKey` was certainly not added to the filter. */
  keyMayMatch(userKey: Uint8Array): boolean {
    switch (this.kind) {
      case 'fastLocalBloom':
        // Hash and probes in one crossing. Either way the cost is mostly the line's cache miss
        // (perf, gets from tables: 5.5% of a get natively, 6% in JavaScript).
        if (nativeSearch !== null) return nativeSearch.bloomMayMatch(this.bits, this.lengthBytes, this.numProbes, userKey);
        xxph3(userKey, 0, userKey.length);
        return fastLocalBloomHashMayMatch(xxph3Result.lo, xxph3Result.hi, this.lengthBytes, this.numProbes, this.bits);
      case 'legacy':
        return legacyHashMayMatch(
          hash32(userKey, 0, userKey.length, LEGACY_BLOOM_HASH_SEED),
          this.numLines,
          this.numProbes,
          this.bits,
          this.log2LineBytes,
        );
      case 'alwaysFalse':
        return false;
      default:
        return true;
    }
  }
}

/** log2 of the line size of a legacy filter with `lengthBytes` of bits in `numLines` lines, or -1. */
function legacyLog2LineBytes(lengthBytes: number, numLines: number): number {
  if (numLines * CACHE_LINE_BYTES === lengthBytes) return Math.log2(CACHE_LINE_BYTES);
  if (numLines === 0 || lengthBytes % numLines !== 0) return -1;
  for (let log2 = 0; log2 <= MAX_LOG2_LINE_BYTES; log2++) {
    const size = numLines * 2 ** log2;
    if (size === lengthBytes) return log2;
    if (size > lengthBytes) break;
  }
  return -1;
}
