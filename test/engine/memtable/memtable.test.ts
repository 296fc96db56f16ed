import { Memtable, LookupResult, LookupValue } from '../../../src/engine/memtable/memtable';
import { SkipList } from '../../../src/engine/memtable/skiplist';
import {
  compareInternalKeys,
  makeInternalKey,
  sequenceOf,
  typeOf,
  userKeyOf,
  ValueType,
  MAX_SEQUENCE_NUMBER,
} from '../../../src/base/internalKey';
import { perf, resetPerfContext } from '../../../src/base/perfContext';
import { TRY_SEEK_USING_NEXT_STEPS } from '../../../src/base/iterator';
import { mulberry32 } from '../../../src/util/random';

const rng = mulberry32;

const key = (i: number): Buffer => Buffer.from(`key${String(i).padStart(6, '0')}`);

interface Entry {
  ikey: Buffer;
  value: Buffer;
}

/** A memtable filled with random puts/deletes over a small key space, plus the sorted model. */
function build(seed: number, n: number, keySpace: number): { mt: Memtable; model: Entry[] } {
  const r = rng(seed);
  const mt = new Memtable({ initialArenaBytes: 8192 });
  const model: Entry[] = [];
  for (let seq = 1; seq <= n; seq++) {
    const k = key(Math.floor(r() * keySpace));
    const del = r() < 0.2;
    const v = del ? Buffer.alloc(0) : Buffer.from(`v${seq}-${'x'.repeat(Math.floor(r() * 40))}`);
    mt.add(seq, del ? ValueType.Deletion : ValueType.Value, k, v);
    model.push({ ikey: makeInternalKey(k, seq, del ? ValueType.Deletion : ValueType.Value), value: v });
  }
  model.sort((a, b) => compareInternalKeys(a.ikey, b.ikey));
  return { mt, model };
}

function lowerBound(model: Entry[], target: Buffer): number {
  let lo = 0;
  let hi = model.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareInternalKeys(model[mid].ikey, target) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

describe('memtable iterator', () => {
  const { mt, model } = build(11, 5000, 1500);

  test('forward and backward iteration yield every entry in internal-key order', () => {
    const it = mt.newIterator();
    const fwd: Buffer[] = [];
    for (it.first(); it.valid(); it.next()) fwd.push(Buffer.from(it.key()));
    expect(fwd.length).toBe(model.length);
    fwd.forEach((k, i) => expect(k.equals(model[i].ikey)).toBe(true));
    const back: Buffer[] = [];
    for (it.last(); it.valid(); it.prev()) back.push(Buffer.from(it.key()));
    expect(back.reverse().map((b) => b.toString('hex'))).toEqual(fwd.map((b) => b.toString('hex')));
    it.close();
  });

  test('seekGE and seekLT land where binary search on the model says', () => {
    const r = rng(3);
    const it = mt.newIterator();
    for (let i = 0; i < 2000; i++) {
      const target = makeInternalKey(key(Math.floor(r() * 1600)), Math.floor(r() * 6000), r() < 0.5 ? ValueType.Seek : ValueType.Value);
      const at = lowerBound(model, target);
      it.seekGE(target);
      if (at === model.length) expect(it.valid()).toBe(false);
      else {
        expect(it.key().equals(model[at].ikey)).toBe(true);
        expect(it.value().equals(model[at].value)).toBe(true);
      }
      it.seekLT(target);
      if (at === 0) expect(it.valid()).toBe(false);
      else expect(it.key().equals(model[at - 1].ikey)).toBe(true);
    }
    it.close();
  });

  test('seekGE with trySeekUsingNext equals a full seek and steps at most a few times', () => {
    const r = rng(5);
    const a = mt.newIterator();
    const b = mt.newIterator();
    let k = 0;
    let trySeekComparisons = 0;
    let fullSeekComparisons = 0;
    let seeks = 0;
    a.seekGE(makeInternalKey(key(0), MAX_SEQUENCE_NUMBER, ValueType.Seek));
    for (let i = 0; i < 3000; i++) {
      k += r() < 0.7 ? 0 : Math.floor(r() * (r() < 0.95 ? 3 : 60));
      const target = makeInternalKey(key(k), MAX_SEQUENCE_NUMBER, ValueType.Seek);
      resetPerfContext();
      a.seekGE(target, { trySeekUsingNext: true });
      const cmps = perf.keyComparisons;
      trySeekComparisons += cmps;
      resetPerfContext();
      b.seekGE(target);
      fullSeekComparisons += perf.keyComparisons;
      seeks++;
      expect(a.valid()).toBe(b.valid());
      if (!b.valid()) break;
      expect(a.key().equals(b.key())).toBe(true);
      // Stepping costs at most STEPS+1 comparisons; beyond that it must have fallen back to a search.
      if (cmps > TRY_SEEK_USING_NEXT_STEPS + 1) expect(cmps).toBeGreaterThan(TRY_SEEK_USING_NEXT_STEPS + 1 + 5);
    }
    expect(seeks).toBeGreaterThan(1000);
    expect(trySeekComparisons).toBeLessThan(fullSeekComparisons / 4);
    // A target equal to the current key costs exactly one comparison.
    a.seekGE(makeInternalKey(key(10), MAX_SEQUENCE_NUMBER, ValueType.Seek));
    resetPerfContext();
    a.seekGE(makeInternalKey(key(10), MAX_SEQUENCE_NUMBER, ValueType.Seek), { trySeekUsingNext: true });
    expect(perf.keyComparisons).toBe(1);
    a.close();
    b.close();
  });

  test('an iterator sees entries added after it was created', () => {
    const m = new Memtable();
    m.add(1, ValueType.Value, Buffer.from('b'), Buffer.from('1'));
    const it = m.newIterator();
    it.first();
    m.add(2, ValueType.Value, Buffer.from('c'), Buffer.from('2'));
    it.next();
    expect(it.valid()).toBe(true);
    expect(userKeyOf(it.key()).toString()).toBe('c');
    it.close();
  });
});

describe('memtable get', () => {
  test('returns the newest version at or below the read sequence, honouring deletes', () => {
    const { mt, model } = build(21, 4000, 300);
    const r = rng(8);
    const out: LookupValue = { value: null, seq: 0 };
    for (let i = 0; i < 3000; i++) {
      const uk = key(Math.floor(r() * 320));
      const readSeq = 1 + Math.floor(r() * 4200);
      // Model: first entry of this user key with seq <= readSeq.
      const at = lowerBound(model, makeInternalKey(uk, readSeq, ValueType.Seek));
      const e = at < model.length && userKeyOf(model[at].ikey).equals(uk) ? model[at] : null;
      const res = mt.get(uk, readSeq, out);
      if (e === null) expect(res).toBe(LookupResult.NotFound);
      else if (typeOf(e.ikey) === ValueType.Deletion) expect(res).toBe(LookupResult.Deleted);
      else {
        expect(res).toBe(LookupResult.Found);
        expect(out.value!.equals(e.value)).toBe(true);
        expect(sequenceOf(e.ikey)).toBeLessThanOrEqual(readSeq);
      }
    }
  });

  test('a key that is a prefix of another is not confused with it', () => {
    const m = new Memtable();
    m.add(1, ValueType.Value, Buffer.from('ab'), Buffer.from('long'));
    const out: LookupValue = { value: null, seq: 0 };
    expect(m.get(Buffer.from('a'), 10, out)).toBe(LookupResult.NotFound);
    expect(m.get(Buffer.from('abc'), 10, out)).toBe(LookupResult.NotFound);
    expect(m.get(Buffer.from('ab'), 10, out)).toBe(LookupResult.Found);
    expect(m.get(Buffer.from('ab'), 0, out)).toBe(LookupResult.NotFound);
  });
});

describe('memtable storage', () => {
  test('range deletions are stored apart from points and returned in order', () => {
    const m = new Memtable();
    m.add(5, ValueType.RangeDeletion, Buffer.from('m'), Buffer.from('p'));
    m.add(3, ValueType.RangeDeletion, Buffer.from('a'), Buffer.from('f'));
    m.add(9, ValueType.RangeDeletion, Buffer.from('a'), Buffer.from('c'));
    m.add(4, ValueType.Value, Buffer.from('b'), Buffer.from('x'));
    expect(m.pointEntryCount).toBe(1);
    expect(m.rangeTombstones().map((t) => [t.start.toString(), t.end.toString(), t.seq])).toEqual([
      ['a', 'c', 9],
      ['a', 'f', 3],
      ['m', 'p', 5],
    ]);
    const it = m.newRangeTombstoneIterator();
    it.last();
    expect(typeOf(it.key())).toBe(ValueType.RangeDeletion);
    expect(it.value().toString()).toBe('p');
    it.close();
    expect(m.smallestSeq).toBe(3);
    expect(m.largestSeq).toBe(9);
  });

  test('ascending inserts use the splice: at most two comparisons each', () => {
    const s = new SkipList();
    resetPerfContext();
    const n = 20_000;
    for (let i = 0; i < n; i++) s.insert(key(i), i + 1, ValueType.Value, Buffer.from('v'));
    expect(perf.keyComparisons).toBeLessThanOrEqual(n);
    resetPerfContext();
    // Descending inserts search: many more comparisons per insert.
    const d = new SkipList();
    for (let i = 0; i < 2000; i++) d.insert(key(n - i), i + 1, ValueType.Value, Buffer.from('v'));
    expect(perf.keyComparisons).toBeGreaterThan(2000 * 5);
    let count = 0;
    let ordered = true;
    let prev: Buffer | null = null;
    for (let node = s.firstNode(); node !== 0; node = s.nextNode(node)) {
      const k = s.key(node);
      if (prev !== null && compareInternalKeys(prev, k) >= 0) ordered = false;
      prev = k;
      count++;
    }
    expect(ordered).toBe(true);
    expect(count).toBe(n);
  });

  test('inserting an internal key twice is an assertion failure', () => {
    const s = new SkipList();
    s.insert(Buffer.from('a'), 1, ValueType.Value, Buffer.from('1'));
    s.insert(Buffer.from('b'), 1, ValueType.Value, Buffer.from('1'));
    expect(() => s.insert(Buffer.from('a'), 1, ValueType.Value, Buffer.from('2'))).toThrow(/already present/);
  });

  test('memory usage counts arena bytes in use; the arena grows past its initial size, even for large values', () => {
    const m = new Memtable({ initialArenaBytes: 16 * 1024 });
    expect(m.approximateMemoryUsageBytes).toBeLessThan(100); // the head node only
    for (let i = 0; i < 1000; i++) m.add(i + 1, ValueType.Value, key(i), Buffer.alloc(100, i));
    const used = m.approximateMemoryUsageBytes;
    // 117 bytes of key and value per entry plus a 12-byte header and ~1.33 links of 4 bytes.
    expect(used).toBeGreaterThan(1000 * (117 + 12 + 4));
    expect(used).toBeLessThan(1000 * (117 + 12 + 4 * 3 + 3));
    const big = Buffer.alloc(1_000_000, 7);
    m.add(5000, ValueType.Value, Buffer.from('big'), big);
    expect(m.approximateMemoryUsageBytes - used).toBeGreaterThanOrEqual(1_000_000);
    expect(m.approximateMemoryUsageBytes - used).toBeLessThan(1_000_100);
    const out: LookupValue = { value: null, seq: 0 };
    expect(m.get(Buffer.from('big'), 5000, out)).toBe(LookupResult.Found);
    expect(out.value!.equals(big)).toBe(true);
    expect(m.get(key(999), 5000, out)).toBe(LookupResult.Found);
    expect(out.value!.equals(Buffer.alloc(100, 999 & 0xff))).toBe(true);
  });

  test('views handed out before the arena grows stay valid', () => {
    const m = new Memtable({ initialArenaBytes: 1024 });
    m.add(1, ValueType.Value, Buffer.from('first'), Buffer.from('one'));
    const it = m.newIterator();
    it.first();
    const k = it.key();
    const v = it.value();
    for (let i = 0; i < 2000; i++) m.add(i + 2, ValueType.Value, key(i), Buffer.alloc(50, 1));
    expect(userKeyOf(k).toString()).toBe('first');
    expect(v.toString()).toBe('one');
    it.next();
    expect(userKeyOf(it.key()).toString()).toBe(key(0).toString());
    it.close();
  });
});
