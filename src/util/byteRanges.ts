/**
 * Allocation-free helpers for comparing and copying byte ranges on the write path.
 *
 * They exist because the natural alternatives allocate: `Buffer.compare(a.subarray(..), ..)` and
 * `dst.set(src.subarray(..))` create a view object per call, and the native
 * `Buffer#compare(target, start, end, ...)` costs a C++ call per key. For the short keys and
 * values of a typical table a plain JS loop is faster than either, and creates no garbage.
 */

/** Below this many bytes a JS loop beats TypedArray#set (which needs a view for a sub-range). */
const SMALL_COPY_BYTES = 32;

/** Copies src[start, end) to dst at `pos`; returns the position after it. Allocates nothing for small copies. */
export function copyBytes(src: Uint8Array, start: number, end: number, dst: Uint8Array, pos: number): number {
  const n = end - start;
  if (n <= SMALL_COPY_BYTES) {
    for (let i = 0; i < n; i++) dst[pos + i] = src[start + i];
  } else if (start === 0 && end === src.length) {
    dst.set(src, pos);
  } else {
    dst.set(src.subarray(start, end), pos);
  }
  return pos + n;
}

/** Bytewise comparison of a[0, aLength) and b[0, bLength) without creating views. */
export function compareByteRanges(a: Uint8Array, aLength: number, b: Uint8Array, bLength: number): number {
  const n = aLength < bLength ? aLength : bLength;
  for (let i = 0; i < n; i++) {
    const d = a[i] - b[i];
    if (d !== 0) return d;
  }
  return aLength - bLength;
}
