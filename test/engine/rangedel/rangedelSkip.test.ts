/**
 * Range-deleted spans are skipped a child at a time, not an entry at a time: a forward scan over
 * N keys that a newer range tombstone covers visits a handful of their entries (perf.nexts and
 * perf.prevs count table-level steps), forward and backward, and still returns exactly the live keys: those outside the tombstone, those
 * written after it, and everything at a snapshot taken before it.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../../src/engine/engine';
import { WriteBatch } from '../../../src/engine/writeBatch';
import { MAX_SEQUENTIAL_SKIPS } from '../../../src/engine/dbIterator';
import { perf, resetPerfContext } from '../../../src/base/perfContext';

const KEYS = 60_000;
const DELETE_FROM = 5_000;
const DELETE_TO = 55_000;
const key = (i: number): Buffer => {
  const k = Buffer.alloc(8);
  k.writeUInt32BE(i, 4);
  return k;
};
const value = (i: number, round: number): Buffer => Buffer.from(`v${round}-${i}`);

let dir: string;
let engine: Engine;

/** Puts every key with its value of `round`, in batches of 1,000, then flushes. */
async function putEveryKey(round: number): Promise<void> {
  let b = new WriteBatch();
  for (let i = 0; i < KEYS; i++) {
    b.put(key(i), value(i, round));
    if (b.count === 1000) {
      await engine.write(b);
      b = new WriteBatch();
    }
  }
  await engine.write(b);
  await engine.flush();
}

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rangedel-skip-'));
  engine = await Engine.open(dir, { writeBufferSizeBytes: 1 << 20, table: { blockSizeBytes: 4096 } });
  await putEveryKey(0);
  await engine.compactRange(); // the keys in the bottom level, in several files
});

afterEach(async () => {
  await engine.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Forward scan of the whole database: its keys as numbers, and the table-level steps it took. */
function scan(opts: Parameters<Engine['newIterator']>[0] = {}): { keys: number[]; values: string[]; nexts: number; skips: number } {
  resetPerfContext();
  const it = engine.newIterator(opts);
  const keys: number[] = [];
  const values: string[] = [];
  for (it.first(); it.valid(); it.next()) {
    keys.push(it.key().readUInt32BE(4));
    values.push(it.value().toString());
  }
  it.close();
  return { keys, values, nexts: perf.nexts, skips: perf.rangeDelSkips };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

it.each([
  ['in the memtable', false],
  ['flushed to L0', true],
])('a tombstone %s: the covered span is skipped, the live keys are exact', async (_where, flush) => {
  const before = engine.getSnapshot();
  await engine.deleteRange(key(DELETE_FROM), key(DELETE_TO));
  // Written after the tombstone, inside its range: must stay visible.
  for (const i of [20_000, 20_001, 40_000]) await engine.put(key(i), value(i, 1));
  if (flush) await engine.flush();

  const got = scan();
  const expected = [...range(0, DELETE_FROM), 20_000, 20_001, 40_000, ...range(DELETE_TO, KEYS)];
  expect(got.keys).toEqual(expected);
  expect(got.values[DELETE_FROM]).toBe('v1-20000');
  expect(got.skips).toBeGreaterThan(0);
  // 10,000 live keys; the 50,000 deleted ones cost only a few steps per skipped span.
  expect(got.nexts).toBeLessThan(expected.length + 20 * (MAX_SEQUENTIAL_SKIPS + 2));
  console.log(
    `tombstone ${flush ? 'in L0' : 'in the memtable'}: ${got.nexts} table steps for ${expected.length} live keys, ${KEYS - expected.length} deleted; ${got.skips} skips`,
  );

  // Backward over the whole database: the same keys, reversed, and the span skipped too.
  resetPerfContext();
  const back = engine.newIterator();
  const reversed: number[] = [];
  for (back.last(); back.valid(); back.prev()) reversed.push(back.key().readUInt32BE(4));
  back.close();
  expect(reversed).toEqual([...expected].reverse());
  expect(perf.rangeDelSkips).toBeGreaterThan(0);
  expect(perf.prevs).toBeLessThan(expected.length + 20 * (MAX_SEQUENTIAL_SKIPS + 2));

  // A snapshot from before the tombstone sees every key, unskipped.
  const old = scan({ snapshot: before });
  expect(old.keys).toEqual(range(0, KEYS));
  expect(old.skips).toBe(0);
  before.release();

  // Bounded scans inside the deleted span, and reverse scans, agree.
  const it = engine.newIterator({ lowerBound: key(DELETE_FROM - 3), upperBound: key(DELETE_TO + 3) });
  const bounded: number[] = [];
  for (it.first(); it.valid(); it.next()) bounded.push(it.key().readUInt32BE(4));
  const reverse: number[] = [];
  for (it.last(); it.valid(); it.prev()) reverse.push(it.key().readUInt32BE(4));
  it.close();
  const boundedExpected = [
    DELETE_FROM - 3,
    DELETE_FROM - 2,
    DELETE_FROM - 1,
    20_000,
    20_001,
    40_000,
    DELETE_TO,
    DELETE_TO + 1,
    DELETE_TO + 2,
  ];
  expect(bounded).toEqual(boundedExpected);
  expect(reverse).toEqual([...boundedExpected].reverse());
});

it('an older tombstone under newer data skips nothing it must not', async () => {
  await engine.deleteRange(key(DELETE_FROM), key(DELETE_TO));
  await engine.flush();
  // Rewrite every key after the tombstone: all of them are live again.
  await putEveryKey(2);
  const got = scan();
  expect(got.keys).toEqual(range(0, KEYS));
  expect(got.values.every((v, i) => v === `v2-${i}`)).toBe(true);
});

it('seeks with trySeekUsingNext across a skipped span land where full seeks do', async () => {
  await engine.deleteRange(key(DELETE_FROM), key(DELETE_TO));
  for (const i of [30_000, 50_000]) await engine.put(key(i), value(i, 1));
  const tryIt = engine.newIterator();
  const fullIt = engine.newIterator();
  tryIt.first();
  for (let target = 0; target < KEYS; target += 997) {
    // Walk on a few keys, then seek ahead with the flag.
    for (let j = 0; j < 3 && tryIt.valid(); j++) tryIt.next();
    tryIt.seekGE(key(target), { trySeekUsingNext: tryIt.valid() && tryIt.key().readUInt32BE(4) <= target });
    fullIt.seekGE(key(target));
    expect(tryIt.valid()).toBe(fullIt.valid());
    if (fullIt.valid()) expect(tryIt.key().readUInt32BE(4)).toBe(fullIt.key().readUInt32BE(4));
  }
  tryIt.close();
  fullIt.close();
});
