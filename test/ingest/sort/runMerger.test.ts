/**
 * The run merger (loser tree with cached 8-byte key prefixes) against a reference sort, on keys
 * built to defeat the prefix shortcut: keys shorter than 8 bytes that are prefixes of others,
 * keys ending in zero bytes (equal once padded), keys sharing 8 leading bytes, empty keys, and
 * duplicates across runs (which must come out in (source, line) order); with key-range bounds and
 * with every run count from 1 up. Then the merge into SSTs under each duplicate policy.
 * The CSV tokenizer's fast path is tested in test/ingest/csv/csvTokenizer.test.ts.
 */
import * as fs from 'fs';
import * as path from 'path';
import { RunInfo, RunWriter, FIRST_ENTRY_OFFSET } from '../../../src/ingest/sort/runFile';
import { RunMerger, compareRanges } from '../../../src/ingest/sort/runMerger';
import { DuplicatePolicy, mergeRunsIntoSsts } from '../../../src/ingest/sort/mergeToSsts';
import { SstSetWriter, publishFiles } from '../../../src/ingest/sort/sstSetWriter';
import { readOutputSsts, tempDir } from '../support';
import { mulberry32 } from '../../../src/util/random';

const rng = mulberry32;

interface Row {
  key: Buffer;
  value: Buffer;
  source: number;
  line: number;
}

/** Keys that share prefixes, end in zeros, are prefixes of each other, or are empty. */
function trickyKey(r: () => number): Buffer {
  const bases = [
    '',
    'a',
    'ab',
    'ab\u0000',
    'ab\u0000\u0000',
    'abcdefgh',
    'abcdefgh\u0000',
    'abcdefghZ',
    'abcdefgi',
    '\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff\u00ff',
  ];
  const base = Buffer.from(bases[Math.floor(r() * bases.length)], 'latin1');
  if (r() < 0.5) return base;
  const tail = Buffer.alloc(1 + Math.floor(r() * 10));
  for (let i = 0; i < tail.length; i++) tail[i] = r() < 0.3 ? 0 : r() < 0.6 ? 0xff : Math.floor(r() * 256);
  return Buffer.concat([base, tail]);
}

function compareRows(a: Row, b: Row): number {
  return Buffer.compare(a.key, b.key) || a.source - b.source || a.line - b.line;
}

/** Writes `rows` as runs (each sorted), spreading them over `runCount` runs at random. */
function writeRuns(dir: string, rows: Row[], runCount: number, r: () => number): RunInfo[] {
  const groups: Row[][] = Array.from({ length: runCount }, () => []);
  for (const row of rows) groups[Math.floor(r() * runCount)].push(row);
  return groups.map((g, i) => {
    g.sort(compareRows);
    const w = new RunWriter(path.join(dir, `r${i}.run`));
    for (const row of g) {
      const both = Buffer.concat([row.key, row.value]);
      w.add(both, 0, row.key.length, row.value.length, row.source, row.line);
    }
    return w.finish();
  });
}

function drain(merger: RunMerger): Row[] {
  const out: Row[] = [];
  try {
    while (merger.next()) {
      const c = merger.current;
      if (c === null) throw new Error('next() returned true without a current reader');
      out.push({
        key: Buffer.from(c.buf.subarray(c.keyStart, c.keyEnd)),
        value: Buffer.from(c.buf.subarray(c.keyEnd, c.valueEnd)),
        source: c.source,
        line: c.line,
      });
    }
  } finally {
    merger.close();
  }
  return out;
}

function makeRows(seed: number, n: number): Row[] {
  const r = rng(seed);
  const rows: Row[] = [];
  for (let i = 0; i < n; i++) {
    // About a third of the rows repeat an earlier key (from another source or line).
    const key = i > 0 && r() < 0.35 ? rows[Math.floor(r() * rows.length)].key : trickyKey(r);
    rows.push({ key, value: Buffer.from(`v${i}`), source: Math.floor(r() * 4), line: i + 1 });
  }
  return rows;
}

describe('RunMerger', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('merge-test-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each([1, 2, 3, 5, 8, 13, 17])('merges %i runs in (key, source, line) order', (runCount) => {
    const rows = makeRows(runCount, 1500);
    const runs = writeRuns(dir, rows, runCount, rng(100 + runCount));
    // A small read buffer makes readers refill in the middle of the merge.
    const got = drain(new RunMerger(runs, 256));
    const expected = [...rows].sort(compareRows);
    expect(got.length).toBe(expected.length);
    for (let i = 0; i < got.length; i++) {
      expect([got[i].key.toString('hex'), got[i].source, got[i].line, got[i].value.toString()]).toEqual([
        expected[i].key.toString('hex'),
        expected[i].source,
        expected[i].line,
        expected[i].value.toString(),
      ]);
    }
  });

  it('keeps only keys in [low, high), whatever the read start offsets', () => {
    const rows = makeRows(77, 1200);
    const runs = writeRuns(dir, rows, 4, rng(78));
    const low = Buffer.from('ab\u0000', 'latin1');
    const high = Buffer.from('abcdefgh\u0000', 'latin1');
    const got = drain(new RunMerger(runs, 512, { low, high, startOffsets: runs.map(() => FIRST_ENTRY_OFFSET) }));
    const expected = [...rows].filter((x) => Buffer.compare(x.key, low) >= 0 && Buffer.compare(x.key, high) < 0).sort(compareRows);
    expect(expected.length).toBeGreaterThan(50);
    expect(got.map((x) => `${x.key.toString('hex')}/${x.source}/${x.line}`)).toEqual(
      expected.map((x) => `${x.key.toString('hex')}/${x.source}/${x.line}`),
    );
  });

  it('handles no runs and empty runs', () => {
    expect(drain(new RunMerger([], 1024))).toEqual([]);
    const empty = new RunWriter(path.join(dir, 'empty.run')).finish();
    const one = writeRuns(dir, [{ key: Buffer.from('k'), value: Buffer.from('v'), source: 0, line: 1 }], 1, rng(1));
    const got = drain(new RunMerger([empty, ...one, empty], 1024));
    expect(got.map((x) => x.key.toString())).toEqual(['k']);
  });

  it('compareRanges is bytewise with shorter-first, on short and long ranges', () => {
    const r = rng(3);
    for (let i = 0; i < 500; i++) {
      const a = trickyKey(r);
      const b = r() < 0.3 ? Buffer.from(a) : trickyKey(r);
      const pad = Buffer.alloc(40, 7);
      const la = Buffer.concat([pad, a, pad]);
      const lb = Buffer.concat([pad, b]);
      expect(Math.sign(compareRanges(a, 0, a.length, b, 0, b.length))).toBe(Buffer.compare(a, b));
      expect(Math.sign(compareRanges(la, 0, la.length - pad.length, lb, 0, lb.length))).toBe(
        Buffer.compare(la.subarray(0, la.length - pad.length), lb),
      );
    }
  });
});

describe('mergeRunsIntoSsts', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir('merge-sst-test-');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it.each<DuplicatePolicy>(['first', 'last', 'error'])(
    'applies the %s policy to keys that differ only past the prefix or in length',
    (policy) => {
      const rows = makeRows(policy.length, 2000).filter((x) => x.key.length > 0);
      const runs = writeRuns(dir, rows, 5, rng(9));
      const out = new SstSetWriter(dir, 'test', 0, 1 << 30, { compression: 0 });
      const result = mergeRunsIntoSsts(runs, policy, out, 300);
      const files = policy === 'error' ? [] : out.finish();
      if (policy === 'error') out.abort();
      const sorted = [...rows].sort(compareRows);
      const groups = new Map<string, Row[]>();
      for (const x of sorted) {
        const k = x.key.toString('hex');
        const g = groups.get(k);
        if (g === undefined) groups.set(k, [x]);
        else g.push(x);
      }
      expect(result.rowsMerged).toBe(rows.length);
      expect(result.duplicateCount).toBe(rows.length - groups.size);
      const firstDup = [...groups.values()].find((g) => g.length > 1) as Row[];
      expect(result.duplicates[0].key.toString('hex')).toBe(firstDup[0].key.toString('hex'));
      expect(result.duplicates[0].first).toEqual({ source: firstDup[0].source, line: firstDup[0].line });
      expect(result.duplicates[0].duplicate).toEqual({ source: firstDup[1].source, line: firstDup[1].line });
      if (policy === 'error') {
        expect(result.rowsWritten).toBe(0);
        return;
      }
      publishFiles(dir, files);
      const { entries } = readOutputSsts(dir);
      const expected = [...groups.values()].map((g) => (policy === 'first' ? g[0] : g[g.length - 1]));
      expect(result.rowsWritten).toBe(expected.length);
      expect(entries.map((e) => `${e.key.toString('hex')}=${e.value.toString()}`)).toEqual(
        expected.map((x) => `${x.key.toString('hex')}=${x.value.toString()}`),
      );
    },
  );
});
