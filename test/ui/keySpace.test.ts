/**
 * The console's LSM layout (ui/src/keySpace.ts, pure, no DOM): key positions on the value and
 * ordinal scales, and the stacking of overlapping files into lanes.
 */
import { keySpaceOf, laneCount, placeBars } from '../../ui/src/keySpace';

const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');
const range = (a: string, b: string): { smallestHex: string; largestHex: string } => ({ smallestHex: hex(a), largestHex: hex(b) });

test('value scale: decimal text keys fall where their numbers do (radix 10, not 256)', () => {
  const space = keySpaceOf([range('k0000', 'k9999'), range('k5000', 'k5999')], 'value');
  expect(space.scale).toBe('value');
  expect(space.positionOf(hex('k0000'))).toBe(0);
  expect(space.positionOf(hex('k9999'))).toBe(1);
  expect(space.positionOf(hex('k5000'))).toBeCloseTo(0.5, 1);
  expect(space.positionOf(hex('k5999')) - space.positionOf(hex('k5000'))).toBeCloseTo(0.1, 1);
});

test('value scale: big-endian integers map linearly, and order is kept for keys of different lengths', () => {
  const be = (n: number): string => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(n));
    return b.toString('hex');
  };
  const space = keySpaceOf([{ smallestHex: be(1000), largestHex: be(1_001_000) }], 'value');
  expect(space.positionOf(be(501_000))).toBeCloseTo(0.5, 2);
  const mixed = keySpaceOf([range('a', 'b'), range('ab', 'abc'), range('b', 'ba')], 'value');
  const order = ['a', 'ab', 'abc', 'b', 'ba'].map((k) => mixed.positionOf(hex(k)));
  expect([...order].sort((x, y) => x - y)).toEqual(order);
  expect(new Set(order).size).toBe(order.length);
});

test('ordinal scale; one key in every file falls back to it (no span)', () => {
  const ordinal = keySpaceOf([range('a', 'b'), range('c', 'zzz')], 'ordinal');
  expect(['a', 'b', 'c', 'zzz'].map((k) => ordinal.positionOf(hex(k)))).toEqual([0, 1 / 3, 2 / 3, 1]);
  const single = keySpaceOf([range('same', 'same'), range('same', 'same')], 'value');
  expect(single.scale).toBe('ordinal');
  expect(single.positionOf(hex('same'))).toBe(0.5);
});

test('overlapping files are stacked into lanes, at most the lanes allowed; disjoint ones share one', () => {
  const space = keySpaceOf([range('k0000', 'k9999')], 'value');
  const overlapping = [range('k0000', 'k5000'), range('k1000', 'k6000'), range('k2000', 'k7000'), range('k8000', 'k9999')];
  const bars = placeBars(overlapping, space, 0.004, 8);
  expect(bars.map((b) => b.lane)).toEqual([0, 1, 2, 0]);
  expect(laneCount(bars)).toBe(3);
  expect(laneCount(placeBars(overlapping, space, 0.004, 2))).toBe(2);
  const disjoint = [range('k0000', 'k0999'), range('k1000', 'k1999'), range('k2000', 'k2999')];
  expect(laneCount(placeBars(disjoint, space, 0.004, 8))).toBe(1);
});
