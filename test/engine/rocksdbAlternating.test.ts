/**
 * One database directory, alternately written by our engine and by RocksDB (ldb), checked against
 * an in-memory model at every hand-over (issue 17: "the same randomized model test ... on a
 * directory that alternates between our engine and RocksDB").
 *
 * Each of ROUNDS rounds hands the directory to one side, which applies a few hundred random
 * operations over a small key space (so deletions and range deletions hit live keys): puts,
 * point deletions, range deletions, and now and then a full compaction; our engine also checks
 * point reads against the model as it goes, with a small write buffer so it flushes and compacts
 * mid-round. RocksDB's operations go through ldb (batchput batches, delete, deleterange,
 * compact), each a process that opens the directory, so RocksDB replays and flushes whatever WAL
 * the previous side left. After every round the other side reads the whole database and must see
 * exactly the model: `ldb scan --hex` after our rounds, our engine's scan and gets after
 * RocksDB's. The model is the latest value per key (the reads checked are at the latest sequence).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { LdbDatabase, describeIfRocksdb } from '../support/rocksdbTools';

jest.setTimeout(60_000);

const ROUNDS = 12;
const OUR_OPS_PER_ROUND = 300;
const KEY_SPACE = 400;
const SEED = 20261202;

/** xorshift32: the same draws on every run, so a failure reproduces. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

const keyOf = (i: number): string => `key-${String(i).padStart(4, '0')}`;

class Model {
  readonly live = new Map<string, string>();
  deleteRange(start: string, end: string): void {
    for (const k of [...this.live.keys()]) if (k >= start && k < end) this.live.delete(k);
  }
  sorted(): Array<[string, string]> {
    return [...this.live.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  }
}

/** A range [start, end) of a few keys, start < end. */
function randomRange(r: () => number): [string, string] {
  const a = Math.floor(r() * KEY_SPACE);
  return [keyOf(a), keyOf(a + 1 + Math.floor(r() * 12))];
}

async function ourRound(dir: string, model: Model, r: () => number, round: number): Promise<void> {
  const e = await Engine.open(dir, { writeBufferSizeBytes: 8 * 1024, level0FileNumCompactionTrigger: 3 });
  try {
    for (let op = 0; op < OUR_OPS_PER_ROUND; op++) {
      const x = r();
      const k = keyOf(Math.floor(r() * KEY_SPACE));
      if (x < 0.6) {
        const v = `ours-${round}-${op}-${'v'.repeat(Math.floor(r() * 30))}`;
        await e.put(Buffer.from(k), Buffer.from(v));
        model.live.set(k, v);
      } else if (x < 0.78) {
        await e.delete(Buffer.from(k));
        model.live.delete(k);
      } else if (x < 0.83) {
        const [s, t] = randomRange(r);
        await e.deleteRange(Buffer.from(s), Buffer.from(t));
        model.deleteRange(s, t);
      } else if (x < 0.835) {
        await e.compactRange();
      } else {
        const got = await e.get(Buffer.from(k));
        expect([round, op, k, got === null ? null : got.toString()]).toEqual([round, op, k, model.live.get(k) ?? null]);
      }
    }
  } finally {
    await e.close();
  }
}

/** RocksDB's round: a few batchputs, deletes and deleteranges through ldb, sometimes a compaction. */
function rocksdbRound(ldb: LdbDatabase, model: Model, r: () => number, round: number): void {
  for (let step = 0; step < 8; step++) {
    const x = r();
    if (x < 0.45) {
      const batch = new Map<string, string>();
      const n = 20 + Math.floor(r() * 40);
      for (let i = 0; i < n; i++) batch.set(keyOf(Math.floor(r() * KEY_SPACE)), `rocks-${round}-${step}-${i}`);
      ldb.batchPut([...batch].map(([k, v]) => [Buffer.from(k), Buffer.from(v)]));
      for (const [k, v] of batch) model.live.set(k, v);
    } else if (x < 0.7) {
      const k = keyOf(Math.floor(r() * KEY_SPACE));
      ldb.delete(Buffer.from(k));
      model.live.delete(k);
    } else if (x < 0.9) {
      const [s, t] = randomRange(r);
      ldb.deleteRange(Buffer.from(s), Buffer.from(t));
      model.deleteRange(s, t);
    } else {
      ldb.compact();
    }
  }
}

async function ourScan(dir: string, model: Model, r: () => number): Promise<Array<[string, string]>> {
  const e = await Engine.open(dir);
  try {
    for (let i = 0; i < 50; i++) {
      const k = keyOf(Math.floor(r() * KEY_SPACE));
      const got = await e.get(Buffer.from(k));
      expect([k, got === null ? null : got.toString()]).toEqual([k, model.live.get(k) ?? null]);
    }
    const out: Array<[string, string]> = [];
    const it = e.newIterator();
    for (it.first(); it.valid(); it.next()) out.push([it.key().toString(), it.value().toString()]);
    it.close();
    return out;
  } finally {
    await e.close();
  }
}

describeIfRocksdb('a directory alternating between our engine and RocksDB', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rocksdb-alternating-'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  test(`${ROUNDS} rounds of random operations, each side reading exactly the model after the other`, async () => {
    const dir = path.join(root, 'db');
    const ldb = new LdbDatabase(dir); // RocksDB's default options: Snappy
    const model = new Model();
    const r = rng(SEED);
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        await ourRound(dir, model, r, round);
        const seen = ldb.scan().map(([k, v]): [string, string] => [k.toString(), v.toString()]);
        expect({ round, side: 'ldb after ours', seen }).toEqual({ round, side: 'ldb after ours', seen: model.sorted() });
        ldb.checkConsistency();
      } else {
        rocksdbRound(ldb, model, r, round);
        const seen = await ourScan(dir, model, r);
        expect({ round, side: 'ours after ldb', seen }).toEqual({ round, side: 'ours after ldb', seen: model.sorted() });
      }
    }
    // Both sides' writes survive in the final state, so each side really read the other's.
    const values = [...model.live.values()];
    expect(values.some((v) => v.startsWith('rocks-'))).toBe(true);
    expect(values.some((v) => v.startsWith('ours-'))).toBe(true);
    expect(model.live.size).toBeGreaterThan(50);
  });
});
