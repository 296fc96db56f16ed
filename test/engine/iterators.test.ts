import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { InternalIterator, SeekOptions } from '../../src/base/iterator';
import { MergingIterator } from '../../src/engine/mergingIterator';
import { LevelIterator } from '../../src/engine/levelIterator';
import { PerKeyBoundsIterator } from '../../src/engine/boundedIterator';
import { TableCache } from '../../src/engine/tableCache';
import { BlockCache } from '../../src/sstable/reader/blockCache';
import { tableFileName } from '../../src/engine/fileNames';
import { FileMetaData } from '../../src/engine/versionEdit';
import { TableFileWriter } from '../../src/sstwriter/tableFileWriter';
import { compareInternalKeys, makeInternalKey, MAX_SEQUENCE_NUMBER, userKeyOf, ValueType } from '../../src/base/internalKey';
import { perf, resetPerfContext } from '../../src/base/perfContext';
import { mulberry32 } from '../../src/util/random';

const rng = mulberry32;

type Entry = [Buffer, Buffer];

/** An InternalIterator over a sorted array that records the seek options it was given. */
class ArrayIterator implements InternalIterator {
  private i = -1;
  readonly seekOptions: Array<SeekOptions | undefined> = [];
  constructor(private readonly entries: Entry[]) {}
  valid(): boolean {
    return this.i >= 0 && this.i < this.entries.length;
  }
  key(): Buffer {
    return this.entries[this.i][0];
  }
  value(): Buffer {
    return this.entries[this.i][1];
  }
  first(): void {
    this.i = 0;
  }
  last(): void {
    this.i = this.entries.length - 1;
  }
  seekGE(target: Buffer, opts?: SeekOptions): void {
    this.seekOptions.push(opts);
    if (opts?.trySeekUsingNext === true) {
      // The caller's promise (src/base/iterator.ts): nothing before the current entry is >= target.
      const passed = Math.min(this.i, this.entries.length);
      for (let j = 0; j < passed; j++) expect(compareInternalKeys(this.entries[j][0], target)).toBeLessThan(0);
    }
    this.i = this.entries.findIndex((e) => compareInternalKeys(e[0], target) >= 0);
    if (this.i < 0) this.i = this.entries.length;
  }
  seekLT(target: Buffer): void {
    let j = this.entries.length - 1;
    while (j >= 0 && compareInternalKeys(this.entries[j][0], target) >= 0) j--;
    this.i = j;
  }
  next(): void {
    this.i++;
  }
  prev(): void {
    this.i--;
  }
  close(): void {}
}

const ik = (k: string, seq: number, type = ValueType.Value): Buffer => makeInternalKey(Buffer.from(k), seq, type);

describe('merging iterator', () => {
  test('matches the sorted union in both directions, across direction switches and seeks', () => {
    const r = rng(1);
    const all: Entry[] = [];
    const parts: Entry[][] = [[], [], [], [], []];
    let seq = 1;
    for (let i = 0; i < 600; i++) {
      const e: Entry = [ik(`key${String(Math.floor(r() * 200)).padStart(4, '0')}`, seq++), Buffer.from(`v${i}`)];
      all.push(e);
      parts[Math.floor(r() * (parts.length - 1))].push(e); // the last child stays empty
    }
    const byKey = (a: Entry, b: Entry): number => compareInternalKeys(a[0], b[0]);
    all.sort(byKey);
    for (const p of parts) p.sort(byKey);
    const m = new MergingIterator(parts.map((p) => new ArrayIterator(p)));
    const seen: string[] = [];
    for (m.first(); m.valid(); m.next()) seen.push(m.key().toString('hex'));
    expect(seen).toEqual(all.map((e) => e[0].toString('hex')));
    const back: string[] = [];
    for (m.last(); m.valid(); m.prev()) back.push(m.key().toString('hex'));
    expect(back.reverse()).toEqual(seen);

    // Random walk with direction switches and seeks.
    let pos = -1;
    for (let step = 0; step < 3000; step++) {
      const x = r();
      if (x < 0.1 || pos < 0 || pos >= all.length) {
        const target = ik(`key${String(Math.floor(r() * 210)).padStart(4, '0')}`, Math.floor(r() * 700));
        if (r() < 0.5) {
          m.seekGE(target);
          pos = all.findIndex((e) => compareInternalKeys(e[0], target) >= 0);
          if (pos < 0) pos = all.length;
        } else {
          m.seekLT(target);
          pos = all.length - 1;
          while (pos >= 0 && compareInternalKeys(all[pos][0], target) >= 0) pos--;
        }
      } else if (x < 0.55) {
        m.next();
        pos++;
      } else {
        m.prev();
        pos--;
      }
      const inRange = pos >= 0 && pos < all.length;
      expect(m.valid()).toBe(inRange);
      if (inRange) {
        expect(m.key().equals(all[pos][0])).toBe(true);
        expect(m.value().equals(all[pos][1])).toBe(true);
      }
    }
  });

  test('trySeekUsingNext goes to every live child, next() in between included; exhausted children are not asked', () => {
    const a = new ArrayIterator([
      [ik('a', 1), Buffer.from('1')],
      [ik('c', 2), Buffer.from('2')],
      [ik('e', 3), Buffer.from('3')],
    ]);
    const b = new ArrayIterator([
      [ik('b', 4), Buffer.from('4')],
      [ik('f', 5), Buffer.from('5')],
    ]);
    const m = new MergingIterator([a, b]);
    const seek = (k: string): Buffer => ik(k, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    const flags = (it: ArrayIterator): boolean | undefined => it.seekOptions[it.seekOptions.length - 1]?.trySeekUsingNext;
    const seeks = (): number[] => [a.seekOptions.length, b.seekOptions.length];
    m.seekGE(seek('a'));
    expect([flags(a), flags(b)]).toEqual([undefined, undefined]);
    m.seekGE(seek('a'), { trySeekUsingNext: true });
    expect([flags(a), flags(b)]).toEqual([true, true]);
    m.next(); // moves child a (from "a" to "c"); the top is now b
    expect(userKeyOf(m.key()).toString()).toBe('b');
    m.seekGE(seek('d'), { trySeekUsingNext: true }); // ArrayIterator checks the promise it is given
    expect(userKeyOf(m.key()).toString()).toBe('e');
    expect([flags(a), flags(b)]).toEqual([true, true]);
    m.seekGE(seek('f'), { trySeekUsingNext: true });
    expect(userKeyOf(m.key()).toString()).toBe('f');
    expect(seeks()).toEqual([4, 4]); // a ran out
    m.seekGE(seek('g'), { trySeekUsingNext: true });
    expect(m.valid()).toBe(false);
    expect(seeks()).toEqual([4, 5]); // the exhausted child a was not asked again
    m.seekGE(seek('a'));
    m.next();
    m.prev(); // a backward move revokes the flag for everyone
    m.seekGE(seek('e'), { trySeekUsingNext: true });
    expect([flags(a), flags(b)]).toEqual([undefined, undefined]);
  });

  test('trySeekUsingNext with next() in between matches full seeks (randomized)', () => {
    const r = rng(7);
    const all: Entry[] = [];
    const parts: Entry[][] = [[], [], [], []];
    for (let i = 0; i < 400; i++) {
      const e: Entry = [ik(`key${String(Math.floor(r() * 300)).padStart(4, '0')}`, i + 1), Buffer.from(`v${i}`)];
      all.push(e);
      parts[Math.floor(r() * parts.length)].push(e);
    }
    const byKey = (x: Entry, y: Entry): number => compareInternalKeys(x[0], y[0]);
    all.sort(byKey);
    for (const p of parts) p.sort(byKey);
    for (let round = 0; round < 20; round++) {
      const children = parts.map((p) => new ArrayIterator(p));
      const m = new MergingIterator(children);
      let pos = 0;
      let target = ik('key0000', MAX_SEQUENCE_NUMBER, ValueType.Seek);
      m.seekGE(target);
      while (pos < all.length) {
        if (r() < 0.5) {
          // Step a few times, then seek to a target at or past the current entry (the promise
          // holds: nothing passed is >= it).
          const steps = Math.floor(r() * 4);
          for (let s = 0; s < steps && m.valid(); s++, pos++) m.next();
        }
        const from = Math.min(pos, all.length - 1);
        const ahead = all[Math.min(all.length - 1, from + Math.floor(r() * 12))][0];
        target = r() < 0.3 ? ahead : ik(userKeyOf(ahead).toString(), Math.floor(r() * 500) + 1);
        if (compareInternalKeys(target, all[from][0]) < 0) target = all[from][0];
        m.seekGE(target, { trySeekUsingNext: true });
        pos = all.findIndex((e) => compareInternalKeys(e[0], target) >= 0);
        if (pos < 0) pos = all.length;
        expect(m.valid()).toBe(pos < all.length);
        if (pos < all.length) expect(m.key().equals(all[pos][0])).toBe(true);
        if (r() < 0.1) break;
      }
    }
  });
});

describe('level iterator', () => {
  let dir: string;
  let cache: TableCache;
  let files: FileMetaData[];
  const KEYS_PER_FILE = 2000;
  const FILES = 4;
  const key = (i: number): string => `key${String(i).padStart(6, '0')}`;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-level-'));
    files = [];
    for (let f = 0; f < FILES; f++) {
      const number = f + 1;
      const w = new TableFileWriter(tableFileName(dir, number), { blockSizeBytes: 1024 });
      for (let i = f * KEYS_PER_FILE; i < (f + 1) * KEYS_PER_FILE; i++) w.add(ik(key(i), i + 1), Buffer.from(`value-${i}`));
      const res = w.finish();
      files.push({
        fileNumber: number,
        fileSizeBytes: res.fileSizeBytes,
        smallest: res.smallestKey,
        largest: res.largestKey,
        smallestSeq: res.smallestSeq,
        largestSeq: res.largestSeq,
      });
    }
    cache = new TableCache(dir, { maxOpenFiles: 2, blockCache: new BlockCache(1 << 20) });
  });
  afterAll(() => {
    cache.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const userKeys = (it: InternalIterator, dirn: 1 | -1, limit = Infinity): string[] => {
    const out: string[] = [];
    for (dirn > 0 ? it.first() : it.last(); it.valid() && out.length < limit; dirn > 0 ? it.next() : it.prev())
      out.push(userKeyOf(it.key()).toString());
    return out;
  };

  test('iterates every file in both directions, opening files only as it reaches them', () => {
    const it = new LevelIterator(files, cache);
    expect(cache.openCount).toBe(0);
    it.first();
    expect(it.currentFileNumber).toBe(1);
    const fwd = userKeys(it, 1);
    expect(fwd.length).toBe(FILES * KEYS_PER_FILE);
    expect(fwd[0]).toBe(key(0));
    expect(fwd[fwd.length - 1]).toBe(key(FILES * KEYS_PER_FILE - 1));
    expect(userKeys(it, -1).reverse()).toEqual(fwd);
    it.seekGE(ik(key(2 * KEYS_PER_FILE + 5), MAX_SEQUENCE_NUMBER, ValueType.Seek));
    expect(userKeyOf(it.key()).toString()).toBe(key(2 * KEYS_PER_FILE + 5));
    expect(it.currentFileNumber).toBe(3);
    it.seekLT(ik(key(2 * KEYS_PER_FILE), MAX_SEQUENCE_NUMBER, ValueType.Seek));
    expect(userKeyOf(it.key()).toString()).toBe(key(2 * KEYS_PER_FILE - 1));
    expect(it.currentFileNumber).toBe(2);
    it.seekGE(ik('zzz', MAX_SEQUENCE_NUMBER, ValueType.Seek));
    expect(it.valid()).toBe(false);
    it.close();
  });

  test('bounds: files outside are never opened, files wholly inside are never compared per key', () => {
    // Bounds cut into file 2 and file 3; file 1 is outside, and file 4 starts past the upper bound.
    const lower = Buffer.from(key(KEYS_PER_FILE + 100));
    const upper = Buffer.from(key(2 * KEYS_PER_FILE + 50));
    const evictAll = (): void => {
      for (const f of files) cache.evict(f.fileNumber);
    };
    evictAll();
    const opened: number[] = [];
    const origAcquire = cache.acquire.bind(cache);
    cache.acquire = (f: FileMetaData) => {
      opened.push(f.fileNumber);
      return origAcquire(f);
    };
    try {
      const it = new LevelIterator(files, cache, lower, upper);
      const got = userKeys(it, 1);
      expect(got[0]).toBe(key(KEYS_PER_FILE + 100));
      expect(got[got.length - 1]).toBe(key(2 * KEYS_PER_FILE + 49));
      expect(got.length).toBe(KEYS_PER_FILE - 100 + 50);
      expect(opened).toEqual([2, 3]);
      expect(userKeys(it, -1).reverse()).toEqual(got);
      it.close();

      // Bounds that contain all of files 2 and 3: no per-key or per-block bound work in them.
      const inside = new LevelIterator(files, cache, Buffer.from(key(KEYS_PER_FILE)), Buffer.from(key(3 * KEYS_PER_FILE)));
      resetPerfContext();
      const all = userKeys(inside, 1);
      expect(all.length).toBe(2 * KEYS_PER_FILE);
      // One clamp of first()'s target, then per file: smallest vs upper, smallest vs lower,
      // largest vs upper; plus the check that ends the scan at file 4.
      expect(perf.boundComparisons).toBeLessThanOrEqual(8);
      inside.close();
    } finally {
      cache.acquire = origAcquire;
    }
  });

  test('a bounded scan through a per-key bounds wrapper pays one bound comparison per key instead', () => {
    const upper = Buffer.from(key(3 * KEYS_PER_FILE));
    const perKey = new PerKeyBoundsIterator(new LevelIterator(files, cache), undefined, upper);
    resetPerfContext();
    const n = userKeys(perKey, 1).length;
    expect(n).toBe(3 * KEYS_PER_FILE);
    expect(perf.boundComparisons).toBeGreaterThanOrEqual(n);
    perKey.close();
  });

  test('trySeekUsingNext steps within and across files and matches full seeks', () => {
    const r = rng(9);
    const a = new LevelIterator(files, cache);
    const b = new LevelIterator(files, cache);
    let i = 0;
    let tryComparisons = 0;
    let fullComparisons = 0;
    let first = true;
    while (i < FILES * KEYS_PER_FILE + 10) {
      const t = ik(key(i), MAX_SEQUENCE_NUMBER, ValueType.Seek);
      resetPerfContext();
      a.seekGE(t, { trySeekUsingNext: !first });
      tryComparisons += perf.keyComparisons;
      resetPerfContext();
      b.seekGE(t);
      fullComparisons += perf.keyComparisons;
      first = false;
      expect(a.valid()).toBe(b.valid());
      if (b.valid()) expect(a.key().equals(b.key())).toBe(true);
      i += r() < 0.9 ? 1 + Math.floor(r() * 3) : Math.floor(r() * 3000);
    }
    a.seekGE(ik(key(FILES * KEYS_PER_FILE + 5), MAX_SEQUENCE_NUMBER, ValueType.Seek), { trySeekUsingNext: true });
    expect(a.valid()).toBe(false);
    expect(tryComparisons).toBeLessThan(fullComparisons / 2);
    a.close();
    b.close();
  });
});
