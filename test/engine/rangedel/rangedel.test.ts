/**
 * Range-tombstone machinery (src/engine/rangedel): point queries, clipping, the positional
 * aggregator, and output-file boundaries, each checked against a brute-force model that scans the
 * raw tombstones. Fragmentation itself (src/base/fragmenter.ts) is tested in
 * test/base/fragmenter.test.ts.
 */
import { fragmentTombstones, FragmentedTombstoneList, RangeTombstone } from '../../../src/base/fragmenter';
import { clipFragments, findFragment, maxCoveringSeq, maxCoveringSeqOfInternalKey } from '../../../src/engine/rangedel/tombstoneIndex';
import { RangeDelAggregator, RangeDelDirection } from '../../../src/engine/rangedel/rangeDelAggregator';
import {
  assignTombstonesToOutputs,
  clipRangeOfFile,
  fileBoundsWithTombstones,
  filesClaimSameKey,
  isExclusiveSentinel,
  OutputPointKeys,
  tombstoneEndSentinel,
  tombstoneStartKey,
} from '../../../src/engine/rangedel/tombstoneBoundaries';
import { perf, resetPerfContext } from '../../../src/base/perfContext';
import {
  compareInternalKeys,
  makeInternalKey,
  MAX_SEQUENCE_NUMBER,
  sequenceOf,
  typeOf,
  userKeyOf,
  ValueType,
} from '../../../src/base/internalKey';
import { TableBuilder } from '../../../src/sstwriter/tableBuilder';
import { SstFileWriter } from '../../../src/sstwriter/sstFileWriter';
import { describeIfRocksdb, LdbDatabase, rocksdbTools, runTool } from '../../support/rocksdbTools';
import { cmp, k, modelSeqs, probeKeys, randomKey, randomTombstones, UNIVERSE } from '../../support/rangeTombstones';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { mulberry32 } from '../../../src/util/random';

// --- helpers ---------------------------------------------------------------------------------------

const rng = mulberry32;

interface Clip {
  lower: Buffer | null;
  upper: Buffer | null;
}

function inClip(key: Buffer, clip: Clip | undefined): boolean {
  if (clip === undefined) return true;
  return (clip.lower === null || cmp(key, clip.lower) >= 0) && (clip.upper === null || cmp(key, clip.upper) < 0);
}

/** The model: largest seq <= readSeq of a tombstone covering key within clip, or 0. */
function modelCoveringSeq(ts: readonly RangeTombstone[], key: Buffer, readSeq: number, clip?: Clip): number {
  if (!inClip(key, clip)) return 0;
  let best = 0;
  for (const t of ts) {
    if (t.seq <= readSeq && cmp(t.start, key) <= 0 && cmp(key, t.end) < 0 && t.seq > best) best = t.seq;
  }
  return best;
}

// --- point queries and clipping ----------------------------------------------------------------------------

describe('maxCoveringSeq and clipFragments', () => {
  test('randomized against the model, with user and internal keys', () => {
    const r = rng(2);
    const mismatches: string[] = [];
    for (let round = 0; round < 200; round++) {
      const ts = randomTombstones(r, Math.floor(r() * 10), 30);
      const list = fragmentTombstones(ts);
      for (const key of probeKeys(r)) {
        const readSeq = Math.floor(r() * 35);
        const want = modelCoveringSeq(ts, key, readSeq);
        const got = maxCoveringSeq(list, key, readSeq);
        const gotInternal = maxCoveringSeqOfInternalKey(list, makeInternalKey(key, 3, ValueType.Value), readSeq);
        if (got !== want || gotInternal !== want)
          mismatches.push(`round ${round} key ${key.toString('latin1')}@${readSeq}: ${got}/${gotInternal} != ${want}`);
      }
    }
    expect(mismatches).toEqual([]);
  });

  test('randomized clipping, including clips that leave nothing', () => {
    const r = rng(3);
    const mismatches: string[] = [];
    let emptied = 0;
    for (let round = 0; round < 300; round++) {
      const ts = randomTombstones(r, Math.floor(r() * 8), 30);
      const list = fragmentTombstones(ts);
      const clip: Clip = { lower: r() < 0.2 ? null : randomKey(r), upper: r() < 0.2 ? null : randomKey(r) };
      const clipped = clipFragments(list, clip.lower, clip.upper);
      clipped.checkInvariants();
      if (clipped.count === 0) {
        emptied++;
        expect(clipped).toBe(FragmentedTombstoneList.EMPTY);
      }
      for (const key of probeKeys(r)) {
        const readSeq = Math.floor(r() * 35);
        const got = maxCoveringSeq(clipped, key, readSeq);
        const want = modelCoveringSeq(ts, key, readSeq, clip);
        if (got !== want) mismatches.push(`round ${round} key ${key.toString('latin1')}@${readSeq}: ${got} != ${want}`);
      }
    }
    expect(mismatches).toEqual([]);
    expect(emptied).toBeGreaterThan(10);
  });

  test('a clip that cuts nothing returns the list itself', () => {
    const list = fragmentTombstones([{ start: k('c'), end: k('f'), seq: 2 }]);
    expect(clipFragments(list, k('c'), k('f'))).toBe(list);
    expect(clipFragments(list, null, null)).toBe(list);
    expect(clipFragments(list, k('f'), null)).toBe(FragmentedTombstoneList.EMPTY);
    expect(clipFragments(list, k('e'), k('d'))).toBe(FragmentedTombstoneList.EMPTY);
    const cut = clipFragments(list, k('d'), k('e'));
    expect([cut.starts[0].toString(), cut.ends[0].toString()]).toEqual(['d', 'e']);
  });

  test('no fragments: no comparisons', () => {
    resetPerfContext();
    expect(maxCoveringSeq(FragmentedTombstoneList.EMPTY, k('x'), 100)).toBe(0);
    expect(findFragment(FragmentedTombstoneList.EMPTY, k('x'))).toBe(-1);
    expect(clipFragments(FragmentedTombstoneList.EMPTY, k('a'), k('z'))).toBe(FragmentedTombstoneList.EMPTY);
    expect(perf.keyComparisons).toBe(0);
  });
});

// --- aggregator --------------------------------------------------------------------------------------------

interface Source {
  ts: RangeTombstone[];
  clip?: Clip;
}

function randomSources(r: () => number): Source[] {
  const n = Math.floor(r() * 5);
  const out: Source[] = [];
  for (let i = 0; i < n; i++) {
    const ts = randomTombstones(r, Math.floor(r() * 10), 40);
    const clip = r() < 0.5 ? { lower: r() < 0.3 ? null : randomKey(r), upper: r() < 0.3 ? null : randomKey(r) } : undefined;
    out.push({ ts, clip });
  }
  return out;
}

function modelAggregate(sources: readonly Source[], key: Buffer, readSeq: number): number {
  let best = 0;
  for (const s of sources) best = Math.max(best, modelCoveringSeq(s.ts, key, readSeq, s.clip));
  return best;
}

function buildAggregator(sources: readonly Source[]): RangeDelAggregator {
  const agg = new RangeDelAggregator();
  for (const s of sources) agg.addSource(fragmentTombstones(s.ts), s.clip);
  return agg;
}

describe('RangeDelAggregator', () => {
  test('randomized forward and backward sweeps and random jumps match the model', () => {
    const r = rng(4);
    const mismatches: string[] = [];
    for (let round = 0; round < 150; round++) {
      const sources = randomSources(r);
      const agg = buildAggregator(sources);
      const keys = probeKeys(r);
      const readSeq = Math.floor(r() * 45);
      const check = (key: Buffer, dir: RangeDelDirection, rs: number): void => {
        const want = modelAggregate(sources, key, rs);
        const seq = Math.floor(r() * 45);
        const got = agg.maxCoveringSeq(key, rs, dir);
        const byUserKey = agg.shouldDeleteUserKey(key, seq, rs, dir);
        const byInternalKey = agg.shouldDelete(makeInternalKey(key, seq, ValueType.Value), rs, dir);
        if (got !== want || byUserKey !== seq < want || byInternalKey !== seq < want) {
          mismatches.push(
            `round ${round} ${RangeDelDirection[dir]} key ${key.toString('latin1')}@${seq} read ${rs}: ${got}/${byUserKey}/${byInternalKey}, want ${want}`,
          );
        }
      };
      // Forward sweep, then backward, each visiting every key (a key repeats, as versions do).
      for (const key of keys) check(key, RangeDelDirection.Forward, readSeq);
      for (let i = keys.length - 1; i >= 0; i--) check(keys[i], RangeDelDirection.Backward, readSeq);
      // Random jumps (seeks) each followed by a short run in a random direction, varying readSeq.
      for (let j = 0; j < 30; j++) {
        let i = Math.floor(r() * keys.length);
        const dir = r() < 0.5 ? RangeDelDirection.Forward : RangeDelDirection.Backward;
        const rs = r() < 0.7 ? readSeq : Math.floor(r() * 45);
        for (let steps = Math.floor(r() * 8); steps >= 0 && i >= 0 && i < keys.length; steps--) {
          check(keys[i], dir, rs);
          i += dir === RangeDelDirection.Forward ? 1 + Math.floor(r() * 3) : -1 - Math.floor(r() * 3);
        }
      }
    }
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  test('a source added between queries is seen from the next query on', () => {
    const agg = new RangeDelAggregator();
    const a: RangeTombstone[] = [{ start: k('b'), end: k('d'), seq: 5 }];
    const b: RangeTombstone[] = [{ start: k('c'), end: k('f'), seq: 8 }];
    expect(agg.addSource(fragmentTombstones(a))).toBe(true);
    expect(agg.maxCoveringSeq(k('c'), 10, RangeDelDirection.Forward)).toBe(5);
    expect(agg.maxCoveringSeq(k('e'), 10, RangeDelDirection.Forward)).toBe(0);
    expect(agg.addSource(fragmentTombstones(b))).toBe(true);
    expect(agg.maxCoveringSeq(k('e'), 10, RangeDelDirection.Forward)).toBe(8);
    expect(agg.maxCoveringSeq(k('c'), 7, RangeDelDirection.Backward)).toBe(5);
    expect(agg.shouldDeleteUserKey(k('c'), 5, 7, RangeDelDirection.Backward)).toBe(false);
    expect(agg.shouldDeleteUserKey(k('c'), 4, 7, RangeDelDirection.Backward)).toBe(true);
  });

  test('zero sources, empty sources and sources clipped to nothing: no comparisons, nothing kept', () => {
    const agg = new RangeDelAggregator();
    expect(agg.addSource(FragmentedTombstoneList.EMPTY)).toBe(false);
    expect(agg.addSource(fragmentTombstones([]))).toBe(false);
    expect(agg.addSource(FragmentedTombstoneList.EMPTY, { lower: k('a'), upper: k('z') })).toBe(false);
    resetPerfContext();
    expect(agg.addSource(fragmentTombstones([{ start: k('a'), end: k('c'), seq: 9 }]), { lower: k('m'), upper: k('z') })).toBe(false);
    expect(agg.isEmpty).toBe(true);
    expect(agg.numSources).toBe(0);
    resetPerfContext();
    for (const key of UNIVERSE) {
      expect(agg.shouldDelete(makeInternalKey(key, 1, ValueType.Value), 100, RangeDelDirection.Forward)).toBe(false);
      expect(agg.shouldDeleteUserKey(key, 1, 100, RangeDelDirection.Backward)).toBe(false);
      expect(agg.maxCoveringSeq(key, 100, RangeDelDirection.Forward)).toBe(0);
    }
    expect(perf.keyComparisons).toBe(0);
  });

  test('a forward sweep steps the cursor: few comparisons per key, far below a binary search each', () => {
    // 1000 disjoint tombstones [k2i, k2i+1) and a sweep over 6000 keys, six per gap or fragment.
    const key = (i: number): Buffer => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(i);
      return b;
    };
    const ts: RangeTombstone[] = [];
    for (let i = 0; i < 1000; i++) ts.push({ start: key(12 * i), end: key(12 * i + 6), seq: 10 });
    const list = fragmentTombstones(ts);
    const agg = new RangeDelAggregator();
    agg.addSource(list);
    const probes: Buffer[] = [];
    for (let i = 0; i < 12000; i += 2) probes.push(key(i));
    resetPerfContext();
    let deleted = 0;
    for (const p of probes) if (agg.shouldDeleteUserKey(p, 1, 20, RangeDelDirection.Forward)) deleted++;
    const forward = perf.keyComparisons;
    expect(deleted).toBe(3000);
    // Steady state: <= 2 comparisons a key; each of the 2000 region changes costs a few more.
    expect(forward).toBeLessThan(probes.length * 2 + 2000 * 4);
    resetPerfContext();
    for (let i = probes.length - 1; i >= 0; i--) agg.shouldDeleteUserKey(probes[i], 1, 20, RangeDelDirection.Backward);
    expect(perf.keyComparisons).toBeLessThan(probes.length * 2 + 2000 * 4);
    // The same queries by independent binary searches cost more than 10 comparisons each.
    resetPerfContext();
    for (const p of probes) maxCoveringSeq(list, p, 20);
    expect(perf.keyComparisons).toBeGreaterThan(probes.length * 10);
  });

  test('keys inside one region cost at most two comparisons each, whatever the number of sources', () => {
    const agg = new RangeDelAggregator();
    for (let s = 0; s < 8; s++) agg.addSource(fragmentTombstones([{ start: k(`b${s}`), end: k(`y${s}`), seq: 10 + s }]));
    agg.maxCoveringSeq(k('m'), 100, RangeDelDirection.Forward);
    resetPerfContext();
    for (let i = 0; i < 100; i++) expect(agg.maxCoveringSeq(k(`m${String(i).padStart(3, '0')}`), 100, RangeDelDirection.Forward)).toBe(17);
    expect(perf.keyComparisons).toBeLessThanOrEqual(200);
  });
});

// --- output-file boundaries ---------------------------------------------------------------------------------

const ik = (user: string, seq: number, type = ValueType.Value): Buffer => makeInternalKey(k(user), seq, type);
const points = (first: Buffer | null, last: Buffer | null = first): OutputPointKeys => ({ firstPointKey: first, lastPointKey: last });

function describeKey(ikey: Buffer): string {
  const seq = sequenceOf(ikey);
  return `${userKeyOf(ikey).toString('latin1')}@${seq === MAX_SEQUENCE_NUMBER ? 'MAX' : seq}/${typeOf(ikey).toString(16)}`;
}

function pieces(ts: readonly RangeTombstone[]): string[] {
  return ts.map((t) => `[${t.start.toString()},${t.end.toString()})@${t.seq}`);
}

describe('assignTombstonesToOutputs', () => {
  test('the module comment example', () => {
    const frags = fragmentTombstones([
      { start: k('a'), end: k('d'), seq: 7 },
      { start: k('e'), end: k('h'), seq: 9 },
      { start: k('j'), end: k('k'), seq: 5 },
    ]);
    const out = assignTombstonesToOutputs([points(ik('b', 3), ik('c', 3)), points(ik('f', 3), ik('g', 3)), points(ik('i', 3))], frags);
    expect(out.map((o) => pieces(o.tombstones))).toEqual([['[a,d)@7', '[e,f)@9'], ['[f,h)@9'], ['[j,k)@5']]);
    expect(out.map((o) => [describeKey(o.smallest), describeKey(o.largest)])).toEqual([
      ['a@7/f', 'f@MAX/f'],
      ['f@9/f', 'h@MAX/f'],
      ['i@3/1', 'k@MAX/f'],
    ]);
  });

  test('a tombstone spanning the gap between two outputs is split at the next file start', () => {
    const frags = fragmentTombstones([{ start: k('c'), end: k('x'), seq: 4 }]);
    const out = assignTombstonesToOutputs([points(ik('a', 9), ik('d', 9)), points(ik('m', 9), ik('p', 9))], frags);
    expect(out.map((o) => pieces(o.tombstones))).toEqual([['[c,m)@4'], ['[m,x)@4']]);
    // File 0 ends with the exclusive sentinel at m; file 1 starts at its first point (newer than the tombstone).
    expect(describeKey(out[0].largest)).toBe('m@MAX/f');
    expect(isExclusiveSentinel(out[0].largest)).toBe(true);
    expect(describeKey(out[1].smallest)).toBe('m@9/1');
    expect(describeKey(out[1].largest)).toBe('x@MAX/f');
    expect(filesClaimSameKey(out[0].largest, out[1].smallest)).toBe(false);
  });

  test('a newer tombstone piece at the split key starts the next file', () => {
    const frags = fragmentTombstones([{ start: k('c'), end: k('x'), seq: 20 }]);
    const out = assignTombstonesToOutputs([points(ik('a', 9), ik('d', 9)), points(ik('m', 9), ik('p', 9))], frags);
    expect(describeKey(out[1].smallest)).toBe('m@20/f');
    expect(compareInternalKeys(out[0].largest, out[1].smallest)).toBeLessThan(0);
  });

  test('a tombstone before the first point key extends the first file left', () => {
    const frags = fragmentTombstones([{ start: k('a'), end: k('c'), seq: 6 }]);
    const out = assignTombstonesToOutputs([points(ik('k', 2), ik('n', 2)), points(ik('q', 2), ik('s', 2))], frags);
    expect(describeKey(out[0].smallest)).toBe('a@6/f');
    expect(describeKey(out[0].largest)).toBe('n@2/1');
    expect(out[1].tombstones).toEqual([]);
  });

  test('a tombstone past the last point key goes to the last file, which ends at its sentinel', () => {
    const frags = fragmentTombstones([
      { start: k('t'), end: k('w'), seq: 6 },
      { start: k('v'), end: k('z'), seq: 8 },
    ]);
    const out = assignTombstonesToOutputs([points(ik('a', 2), ik('b', 2)), points(ik('q', 2), ik('s', 2))], frags);
    expect(out[0].tombstones).toEqual([]);
    expect(pieces(out[1].tombstones)).toEqual(['[t,v)@6', '[v,w)@8', '[v,w)@6', '[w,z)@8']);
    expect(describeKey(out[1].largest)).toBe('z@MAX/f');
  });

  test('tombstone-only outputs: alone, leading and trailing', () => {
    const frags = fragmentTombstones([
      { start: k('b'), end: k('e'), seq: 3 },
      { start: k('p'), end: k('r'), seq: 3 },
    ]);
    const alone = assignTombstonesToOutputs([points(null)], frags);
    expect(pieces(alone[0].tombstones)).toEqual(['[b,e)@3', '[p,r)@3']);
    expect([describeKey(alone[0].smallest), describeKey(alone[0].largest)]).toEqual(['b@3/f', 'r@MAX/f']);

    const leading = assignTombstonesToOutputs([points(null), points(ik('g', 1), ik('h', 1))], frags);
    expect(leading.map((o) => pieces(o.tombstones))).toEqual([['[b,e)@3'], ['[p,r)@3']]);
    expect(describeKey(leading[0].largest)).toBe('e@MAX/f');

    const trailing = assignTombstonesToOutputs([points(ik('a', 1), ik('c', 1)), points(null)], frags);
    expect(trailing.map((o) => pieces(o.tombstones))).toEqual([['[b,e)@3'], ['[p,r)@3']]);
    expect(describeKey(trailing[0].largest)).toBe('e@MAX/f');
    expect(describeKey(trailing[1].smallest)).toBe('p@3/f');

    // Nothing after the previous file's last point key: the trailing file would be empty.
    expect(() => assignTombstonesToOutputs([points(ik('a', 1), ik('z', 1)), points(null)], frags)).toThrow(/no tombstone after/);
    expect(() => assignTombstonesToOutputs([points(null)], FragmentedTombstoneList.EMPTY)).toThrow(/neither/);
    expect(() => assignTombstonesToOutputs([points(ik('a', 1)), points(null), points(null)], frags)).toThrow(/both lack/);
  });

  test('outputs that split a user key are refused', () => {
    expect(() =>
      assignTombstonesToOutputs([points(ik('a', 5), ik('c', 5)), points(ik('c', 4), ik('d', 4))], FragmentedTombstoneList.EMPTY),
    ).toThrow(/split user key/);
  });

  test('randomized: pieces partition the fragments, bounds contain everything, neighbours never share a key', () => {
    const r = rng(5);
    for (let round = 0; round < 300; round++) {
      const ts = randomTombstones(r, Math.floor(r() * 8), 30);
      const frags = fragmentTombstones(ts);
      // Distinct sorted point user keys, cut into files at random places.
      const userKeys = [...new Set(Array.from({ length: Math.floor(r() * 12) }, () => randomKey(r).toString('latin1')))].map(k).sort(cmp);
      const outputs: OutputPointKeys[] = [];
      const filePoints: Buffer[][] = [];
      let cur: Buffer[] = [];
      for (const uk of userKeys) {
        cur.push(ik(uk.toString('latin1'), 1 + Math.floor(r() * 30)));
        if (r() < 0.3) {
          filePoints.push(cur);
          cur = [];
        }
      }
      if (cur.length > 0) filePoints.push(cur);
      for (const fp of filePoints) outputs.push(points(fp[0], fp[fp.length - 1]));
      if (outputs.length === 0) {
        if (frags.count === 0) continue;
        outputs.push(points(null));
        filePoints.push([]);
      }
      const out = assignTombstonesToOutputs(outputs, frags);

      // The pieces of all files together answer exactly like the original tombstones.
      const all: RangeTombstone[] = out.flatMap((o) => o.tombstones);
      const mismatches: string[] = [];
      for (const key of probeKeys(r)) {
        const got = modelSeqs(all, key).join(',');
        const want = modelSeqs(ts, key).join(',');
        if (got !== want) mismatches.push(`key ${key.toString('latin1')}: ${got} != ${want}`);
      }
      expect(mismatches).toEqual([]);
      for (let i = 0; i < out.length; i++) {
        const o = out[i];
        for (const p of filePoints[i]) {
          expect(compareInternalKeys(o.smallest, p)).toBeLessThanOrEqual(0);
          expect(compareInternalKeys(p, o.largest)).toBeLessThanOrEqual(0);
        }
        for (const t of o.tombstones) {
          expect(compareInternalKeys(o.smallest, tombstoneStartKey(t.start, t.seq))).toBeLessThanOrEqual(0);
          expect(compareInternalKeys(tombstoneEndSentinel(t.end), o.largest)).toBeLessThanOrEqual(0);
          // Reading the file back: its tombstones, clipped to its bounds, are unchanged.
          const { lower, upper } = clipRangeOfFile(o.smallest, o.largest);
          expect(cmp(lower, t.start)).toBeLessThanOrEqual(0);
          expect(cmp(t.end, upper)).toBeLessThanOrEqual(0);
        }
        if (i > 0) {
          expect(filesClaimSameKey(out[i - 1].largest, o.smallest)).toBe(false);
          // A level's order check (version.ts): largest of file i-1 < smallest of file i.
          expect(compareInternalKeys(out[i - 1].largest, o.smallest)).toBeLessThan(0);
          // No user key lies in both files' user-key ranges.
          const prev = clipRangeOfFile(out[i - 1].smallest, out[i - 1].largest);
          const next = clipRangeOfFile(o.smallest, o.largest);
          expect(cmp(prev.upper, next.lower)).toBeLessThanOrEqual(0);
        }
      }
    }
  });
});

describe('fileBoundsWithTombstones and clipRangeOfFile', () => {
  test('tombstones widen the bounds of point keys; the end is an exclusive sentinel', () => {
    const b = fileBoundsWithTombstones(ik('d', 5), ik('f', 5), [
      { start: k('b'), end: k('e'), seq: 3 },
      { start: k('b'), end: k('c'), seq: 4 },
      { start: k('e'), end: k('h'), seq: 2 },
    ]);
    expect([describeKey(b.smallest), describeKey(b.largest)]).toEqual(['b@4/f', 'h@MAX/f']);
    const inner = fileBoundsWithTombstones(ik('a', 5), ik('z', 5), [{ start: k('b'), end: k('z'), seq: 9 }]);
    expect([describeKey(inner.smallest), describeKey(inner.largest)]).toEqual(['a@5/1', 'z@5/1']);
    const only = fileBoundsWithTombstones(undefined, undefined, [{ start: k('m'), end: k('n'), seq: 1 }]);
    expect([describeKey(only.smallest), describeKey(only.largest)]).toEqual(['m@1/f', 'n@MAX/f']);
    expect(() => fileBoundsWithTombstones(null, null, [])).toThrow(/point key or a range tombstone/);
  });

  test('randomized: agrees with the bounds TableBuilder reports for the tables it writes', () => {
    const r = rng(6);
    for (let round = 0; round < 60; round++) {
      const userKeys = [...new Set(Array.from({ length: Math.floor(r() * 6) }, () => randomKey(r).toString('latin1')))].sort();
      const ts = randomTombstones(r, Math.floor(r() * 5), 50).filter((t) => cmp(t.start, t.end) < 0);
      if (userKeys.length === 0 && ts.length === 0) continue;
      const builder = new TableBuilder({ append: () => undefined }, { bloomBitsPerKey: 0 });
      const keys = userKeys.map((u) => ik(u, 1 + Math.floor(r() * 50)));
      for (const key of keys) builder.add(key, k('v'));
      for (const t of ts) builder.addRangeTombstone(t.start, t.end, t.seq);
      const built = builder.finish();
      const mine = fileBoundsWithTombstones(keys[0], keys[keys.length - 1], ts);
      expect(describeKey(mine.smallest)).toBe(describeKey(built.smallestKey));
      expect(describeKey(mine.largest)).toBe(describeKey(built.largestKey));
    }
  });

  test('clip range: sentinel ends are exclusive, point ends inclusive', () => {
    const s = clipRangeOfFile(ik('c', 4), tombstoneEndSentinel(k('m')));
    expect([s.lower.toString(), s.upper.toString()]).toEqual(['c', 'm']);
    const p = clipRangeOfFile(ik('c', 4), ik('m', 4));
    expect(p.upper).toEqual(Buffer.from('m\x00', 'latin1'));
    // A file's tombstone reaching past its point-key end is read only up to and including it.
    const list = clipFragments(fragmentTombstones([{ start: k('a'), end: k('z'), seq: 9 }]), p.lower, p.upper);
    expect(maxCoveringSeq(list, k('m'), 10)).toBe(9);
    expect(maxCoveringSeq(list, k('m\x00'), 10)).toBe(0);
    expect(maxCoveringSeq(list, k('b'), 10)).toBe(0);
  });
});

// --- RocksDB as the oracle of the ingestion bound rule -------------------------------------------------------

describeIfRocksdb('fileBoundsWithTombstones against RocksDB ingestion', () => {
  let scratch = '';
  beforeAll(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rangedel-'));
  });
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  /** The MANIFEST's files as [smallest seqno, smallest, largest] (ldb manifest_dump --hex). */
  function manifestBounds(dbDir: string): Array<{ seqno: number; smallest: string; largest: string }> {
    const manifest = fs.readdirSync(dbDir).find((f) => f.startsWith('MANIFEST-'));
    if (manifest === undefined || rocksdbTools === null) throw new Error(`no MANIFEST in ${dbDir}`);
    const r = runTool(rocksdbTools.ldb, ['manifest_dump', '--hex', `--path=${path.join(dbDir, manifest)}`]);
    expect(r.status).toBe(0);
    const out = [];
    for (const line of r.stdout.split('\n')) {
      const m = /^ \d+:\d+\[(\d+) \.\. \d+\]\[(.*) \.\. (.*)\]$/.exec(line);
      if (m !== null) out.push({ seqno: Number(m[1]), smallest: m[2], largest: m[3] });
    }
    return out;
  }

  const rocksFormat = (ikey: Buffer): string => {
    const seq = sequenceOf(ikey);
    return `'${userKeyOf(ikey).toString('hex').toUpperCase()}' seq:${seq === MAX_SEQUENCE_NUMBER ? '72057594037927935' : seq}, type:${typeOf(ikey)}`;
  };

  test('RocksDB computes the same smallest/largest internal keys for ingested files with tombstones', () => {
    const r = rng(7);
    // Fixed shapes first (points outside the tombstones on both sides, on one side), then random.
    const fixed: Array<[string[], Array<[string, string]>]> = [
      [
        ['a', 'm', 'z'],
        [
          ['c', 'e'],
          ['d', 'f'],
        ],
      ],
      [
        ['b', 'c'],
        [
          ['a', 'bb'],
          ['ca', 'd'],
        ],
      ],
      [['d'], [['a', 'b']]],
    ];
    for (let round = 0; round < 6; round++) {
      const dir = fs.mkdtempSync(path.join(scratch, 'round-'));
      let userKeys = [...new Set(Array.from({ length: Math.floor(r() * 5) }, () => randomKey(r).toString('latin1')))].sort().map(k);
      let ts = randomTombstones(r, 1 + Math.floor(r() * 4), 1).filter((t) => cmp(t.start, t.end) < 0);
      if (round < fixed.length) {
        userKeys = fixed[round][0].map(k);
        ts = fixed[round][1].map(([a, b]) => ({ start: k(a), end: k(b), seq: 0 }));
      }
      if (ts.length === 0) ts.push({ start: k('b'), end: k('c'), seq: 0 });
      const file = path.join(dir, 'in.sst');
      const w = new SstFileWriter(file, { bloomBitsPerKey: 0, backgroundCompression: false });
      for (const uk of userKeys) w.put(uk, k('v'));
      for (const t of ts) w.deleteRange(t.start, t.end);
      w.finish();
      // An older key the tombstones may overlap: then the file gets a non-zero global seqno.
      const db = LdbDatabase.create(path.join(dir, 'db'), k('b'), k('older'));
      db.ingest(file);
      // RocksDB lists the file's tombstones fragmented, all at the file's global seqno.
      const applied = db.rangeDeletes();
      expect(applied.length).toBeGreaterThanOrEqual(ts.length);
      const seqno = applied[0].seq;
      expect(applied.every((t) => t.seq === seqno)).toBe(true);
      const ingested = manifestBounds(db.dir).filter((f) => f.seqno === seqno);
      const mine = fileBoundsWithTombstones(
        userKeys.length > 0 ? ik(userKeys[0].toString('latin1'), seqno) : null,
        userKeys.length > 0 ? ik(userKeys[userKeys.length - 1].toString('latin1'), seqno) : null,
        ts.map((t) => ({ ...t, seq: seqno })),
      );
      expect(ingested.map((f) => [f.smallest, f.largest])).toContainEqual([rocksFormat(mine.smallest), rocksFormat(mine.largest)]);
    }
  });
});
