/**
 * The range-tombstone fragmenter (src/base/fragmenter.ts): overlapping tombstones cut into
 * non-overlapping fragments, each with the distinct sequence numbers covering it (descending),
 * checked on the module comment's example, edge cases, and random tombstones against a
 * brute-force model that scans the raw tombstones.
 */
import { fragmentTombstones, FragmentedTombstoneList } from '../../src/base/fragmenter';
import { findFragment } from '../../src/engine/rangedel/tombstoneIndex';
import { mulberry32 } from '../../src/util/random';
import { k, modelSeqs, probeKeys, randomTombstones } from '../support/rangeTombstones';

const rng = mulberry32;

/** The sequence numbers of fragment i, as stored (descending). */
function fragmentSeqs(list: FragmentedTombstoneList, i: number): number[] {
  return Array.from(list.seqs.subarray(list.seqOffsets[i], list.seqOffsets[i + 1]));
}

describe('fragmentTombstones', () => {
  test('the module comment example', () => {
    const list = fragmentTombstones([
      { start: k('a'), end: k('e'), seq: 7 },
      { start: k('c'), end: k('g'), seq: 9 },
      { start: k('c'), end: k('d'), seq: 4 },
    ]);
    const got = [];
    for (let i = 0; i < list.count; i++) got.push([list.starts[i].toString(), list.ends[i].toString(), fragmentSeqs(list, i)]);
    expect(got).toEqual([
      ['a', 'c', [7]],
      ['c', 'd', [9, 7, 4]],
      ['d', 'e', [9, 7]],
      ['e', 'g', [9]],
    ]);
  });

  test('no tombstones, or only empty ones, give the shared empty list', () => {
    expect(fragmentTombstones([])).toBe(FragmentedTombstoneList.EMPTY);
    expect(
      fragmentTombstones([
        { start: k('b'), end: k('b'), seq: 3 },
        { start: k('c'), end: k('a'), seq: 4 },
      ]),
    ).toBe(FragmentedTombstoneList.EMPTY);
  });

  test('duplicate tombstones collapse to one sequence number; gaps stay uncovered', () => {
    const list = fragmentTombstones([
      { start: k('m'), end: k('p'), seq: 5 },
      { start: k('a'), end: k('c'), seq: 5 },
      { start: k('a'), end: k('c'), seq: 5 },
    ]);
    expect(list.count).toBe(2);
    expect(fragmentSeqs(list, 0)).toEqual([5]);
    expect(findFragment(list, k('d'))).toBe(-1);
    expect(findFragment(list, k('c'))).toBe(-1);
    expect(findFragment(list, k('bzz'))).toBe(0);
    expect(findFragment(list, k('m'))).toBe(1);
  });

  test('randomized: invariants hold and each key sees exactly the covering seqs', () => {
    const r = rng(1);
    const mismatches: string[] = [];
    for (let round = 0; round < 300; round++) {
      const ts = randomTombstones(r, 1 + Math.floor(r() * 12), 20);
      const list = fragmentTombstones([...ts].reverse());
      list.checkInvariants();
      for (const key of probeKeys(r)) {
        const i = findFragment(list, key);
        const got = (i < 0 ? [] : fragmentSeqs(list, i)).join(',');
        const want = modelSeqs(ts, key).join(',');
        if (got !== want) mismatches.push(`round ${round} key ${key.toString('latin1')}: ${got} != ${want}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  test('invariant checks reject a malformed list', () => {
    const bad = new FragmentedTombstoneList([k('a'), k('b')], [k('c'), k('d')], Uint32Array.from([0, 1, 2]), Float64Array.from([3, 4]));
    expect(() => bad.checkInvariants()).toThrow(/overlaps/);
    const badSeqs = new FragmentedTombstoneList([k('a')], [k('c')], Uint32Array.from([0, 2]), Float64Array.from([3, 4]));
    expect(() => badSeqs.checkInvariants()).toThrow(/descending/);
  });
});
