/**
 * Where an LSM file's bar goes: its key range mapped onto [0, 1], the database's whole key space
 * (the smallest key of any file to the largest of any), and its lane within its level's row
 * (L0's files overlap, so they are stacked; a deeper level's files never do, one lane).
 *
 * Keys are hex strings of bytes, and lowercase hex sorts like the bytes it spells. Two scales:
 *   "value"    a key's position is its value as a number, read after the prefix common to the
 *              smallest and largest keys (every key between them shares it) in a mixed radix:
 *              at each byte position only the span of bytes that the files' boundary keys hold
 *              there counts (for decimal text keys '0'..'9', radix 10; for binary integers, up
 *              to 256), so "k5000".."k5999" takes a tenth of "k0000".."k9999", as it should,
 *              rather than the 10/256 of a tenth that raw bytes would give it. Positions are
 *              read while the product of the radices stays within 2^48 (exact in a double).
 *   "ordinal"  a key's position is its rank among all files' boundary keys (Pebble's `lsm`
 *              picture does this), so every file gets room however skewed the keys are.
 * The value scale falls back to ordinal when there is no span (every file holds the one same key).
 */

export type KeyScale = 'value' | 'ordinal';

export interface KeyRange {
  smallestHex: string;
  largestHex: string;
}

/** The mixed-radix number is kept below this: 2^48, exact in a double with room for the arithmetic. */
const VALUE_LIMIT = 2 ** 48;

export interface KeySpace {
  scale: KeyScale;
  /** The key's position in [0, 1]. */
  positionOf(hex: string): number;
}

function commonPrefixBytes(a: string, b: string): number {
  let i = 0;
  while (i + 1 < a.length && i + 1 < b.length && a[i] === b[i] && a[i + 1] === b[i + 1]) i += 2;
  return i / 2;
}

function byteAt(hex: string, index: number): number | null {
  return 2 * index + 1 < hex.length ? parseInt(hex.slice(2 * index, 2 * index + 2), 16) : null;
}

/** Per byte position after the prefix: the lowest byte the keys hold there and the radix (span + 1, and 1 more for "no byte": a shorter key). */
function digitsOf(keys: readonly string[], prefixBytes: number): { low: number; radix: number }[] {
  const digits: { low: number; radix: number }[] = [];
  let product = 1;
  for (let index = prefixBytes; ; index++) {
    let low = 256;
    let high = -1;
    for (const k of keys) {
      const b = byteAt(k, index);
      if (b === null) continue;
      low = Math.min(low, b);
      high = Math.max(high, b);
    }
    if (high < 0) return digits; // every key ended
    const radix = high - low + 2;
    if (product * radix > VALUE_LIMIT) return digits;
    product *= radix;
    digits.push({ low, radix });
  }
}

/** The key as a mixed-radix number (a missing byte is digit 0, a byte b is b - low + 1). */
function valueOf(hex: string, prefixBytes: number, digits: readonly { low: number; radix: number }[]): number {
  let value = 0;
  for (let i = 0; i < digits.length; i++) {
    const b = byteAt(hex, prefixBytes + i);
    const digit = b === null ? 0 : Math.min(digits[i].radix - 1, Math.max(1, b - digits[i].low + 1));
    value = value * digits[i].radix + digit;
  }
  return value;
}

function ordinalSpace(ranges: readonly KeyRange[]): KeySpace {
  const keys = [...new Set(ranges.flatMap((r) => [r.smallestHex, r.largestHex]))].sort();
  const positionOf = (hex: string): number => {
    if (keys.length < 2) return 0.5;
    let lo = 0;
    let hi = keys.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid] < hex) lo = mid + 1;
      else hi = mid;
    }
    return lo / (keys.length - 1);
  };
  return { scale: 'ordinal', positionOf };
}

export function keySpaceOf(ranges: readonly KeyRange[], scale: KeyScale): KeySpace {
  if (ranges.length === 0) return { scale, positionOf: () => 0 };
  if (scale === 'ordinal') return ordinalSpace(ranges);
  const keys = ranges.flatMap((r) => [r.smallestHex, r.largestHex]);
  let min = keys[0];
  let max = keys[0];
  for (const k of keys) {
    if (k < min) min = k;
    if (k > max) max = k;
  }
  const prefix = commonPrefixBytes(min, max);
  const digits = digitsOf(keys, prefix);
  const low = valueOf(min, prefix, digits);
  const span = valueOf(max, prefix, digits) - low;
  if (span <= 0) return ordinalSpace(ranges);
  return { scale, positionOf: (hex) => Math.min(1, Math.max(0, (valueOf(hex, prefix, digits) - low) / span)) };
}

export interface PlacedBar<F> {
  file: F;
  /** Left edge and width as fractions of the key space. */
  left: number;
  width: number;
  lane: number;
}

/**
 * Bars of one level, each in the first lane whose previous bar ends before it starts (bars
 * narrower than `minWidth`, the fraction a bar's minimum pixel width takes, count as that wide);
 * at most `maxLanes` lanes (a level with more overlapping files than that shares the last one).
 */
export function placeBars<F extends KeyRange>(files: readonly F[], space: KeySpace, minWidth: number, maxLanes: number): PlacedBar<F>[] {
  const bars = files.map((file) => {
    const left = space.positionOf(file.smallestHex);
    return { file, left, width: Math.max(0, space.positionOf(file.largestHex) - left), lane: 0 };
  });
  const laneEnds: number[] = [];
  for (const bar of [...bars].sort((a, b) => a.left - b.left)) {
    const end = bar.left + Math.max(bar.width, minWidth);
    let lane = laneEnds.findIndex((laneEnd) => laneEnd < bar.left);
    if (lane < 0) lane = laneEnds.length < maxLanes ? laneEnds.length : maxLanes - 1;
    laneEnds[lane] = Math.max(laneEnds[lane] ?? 0, end);
    bar.lane = lane;
  }
  return bars;
}

/** Lanes a level's placed bars use. */
export function laneCount(bars: readonly PlacedBar<unknown>[]): number {
  return bars.reduce((n, b) => Math.max(n, b.lane + 1), 1);
}
