/**
 * Allocation-free key comparisons for the engine's hot paths (skiplist search, heap merges,
 * bound checks).
 *
 * Same order as compareInternalKeys in src/base/internalKey.ts (user key bytewise ascending,
 * then the 8-byte trailer descending, i.e. newest sequence first), but comparing byte ranges in
 * place: the generic version slices views (an allocation each) and crosses into native code,
 * which costs several times a short JavaScript loop for the 8-64 byte keys typical here. Long
 * keys still go to the native comparison, where its per-call cost is amortized.
 *
 * None of these count perf.keyComparisons; the caller decides what a comparison means.
 */
import { TRAILER_BYTES } from './internalKey';

/** Above this many bytes, Buffer#compare's native loop beats a JavaScript one. */
const NATIVE_COMPARE_MIN_BYTES = 64;

/** Compares a[aStart, aStart+aLen) with b[bStart, bStart+bLen) bytewise. */
export function compareByteRanges(a: Buffer, aStart: number, aLen: number, b: Buffer, bStart: number, bLen: number): number {
  const n = aLen < bLen ? aLen : bLen;
  if (n >= NATIVE_COMPARE_MIN_BYTES) {
    const c = a.compare(b, bStart, bStart + n, aStart, aStart + n);
    if (c !== 0) return c;
  } else {
    for (let i = 0; i < n; i++) {
      const x = a[aStart + i];
      const y = b[bStart + i];
      if (x !== y) return x < y ? -1 : 1;
    }
  }
  return aLen < bLen ? -1 : aLen > bLen ? 1 : 0;
}

/** Bytewise comparison of two whole buffers (user keys). */
export function compareUserKeys(a: Buffer, b: Buffer): number {
  return compareByteRanges(a, 0, a.length, b, 0, b.length);
}

/** Internal-key comparison of two ranges, each holding user key ‖ 8-byte trailer. */
export function compareInternalKeyRanges(a: Buffer, aStart: number, aLen: number, b: Buffer, bStart: number, bLen: number): number {
  const c = compareByteRanges(a, aStart, aLen - TRAILER_BYTES, b, bStart, bLen - TRAILER_BYTES);
  if (c !== 0) return c;
  // Trailers compare descending as u64 little-endian: from the most significant byte down.
  const ae = aStart + aLen - 1;
  const be = bStart + bLen - 1;
  for (let i = 0; i < TRAILER_BYTES; i++) {
    const x = a[ae - i];
    const y = b[be - i];
    if (x !== y) return x > y ? -1 : 1;
  }
  return 0;
}

export function compareInternal(a: Buffer, b: Buffer): number {
  return compareInternalKeyRanges(a, 0, a.length, b, 0, b.length);
}

/** Compares the user key of internal key `ikey` with user key `userKey`. */
export function compareUserKeyOfInternal(ikey: Buffer, userKey: Buffer): number {
  return compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, userKey, 0, userKey.length);
}

/** True when two internal keys share a user key. */
export function sameUserKey(a: Buffer, b: Buffer): boolean {
  return compareByteRanges(a, 0, a.length - TRAILER_BYTES, b, 0, b.length - TRAILER_BYTES) === 0;
}
