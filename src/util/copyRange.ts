/**
 * Copying a byte range on the import's hot paths (read window → sort buffer → spill chunk).
 *
 * Between two different Buffers a copy costs a native call plus a view object (about 100 ns even
 * for 100 bytes); inside one Buffer, `copyWithin` needs no view and costs a quarter of that. The
 * import lays its read window, spill chunk and sort arena out in one Buffer to take that path;
 * short ranges between different Buffers go through a JS loop (sstwriter/byteRanges.copyBytes).
 */
import { copyBytes } from './byteRanges';

/** Copies src[start, end) to dst at `pos` (ranges must not overlap); returns the position after it. */
export function copyRange(src: Buffer, start: number, end: number, dst: Buffer, pos: number): number {
  if (src === dst) {
    dst.copyWithin(pos, start, end);
    return pos + (end - start);
  }
  return copyBytes(src, start, end, dst, pos);
}
