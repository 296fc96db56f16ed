/**
 * Randomized model test of the engine: a seeded sequence of >= 100k operations (puts, deletes,
 * batches, gets, bounded scans in both directions, seekGE runs with and without
 * trySeekUsingNext, snapshots, flushes, moves of files into deeper levels, reopens) checked
 * against an in-memory model after every step. A failure names its seed and step; rerun one seed
 * with ENGINE_MODEL_SEED=<seed>.
 *
 * Writes go to a sliding window of keys so successive flushes cover mostly disjoint ranges; the
 * test then moves the oldest L0 files into L1 and files further down whenever that keeps the LSM
 * order (a file may only move below files that are older than it), which exercises level
 * iterators and the per-level binary search. The last tenth writes anywhere, so L0 ends with
 * overlapping files too.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine, EngineOptions, Snapshot } from '../../src/engine/engine';
import { DbIterator } from '../../src/engine/dbIterator';
import { WriteBatch } from '../../src/engine/writeBatch';
import { VersionEdit, FileMetaData, NUM_LEVELS } from '../../src/engine/versionEdit';
import { TRAILER_BYTES } from '../../src/base/internalKey';
import { mulberry32 } from '../../src/util/random';
import { Model } from '../support/engineModel';

const rng = mulberry32;

const keyName = (i: number): string => `k${String(i).padStart(6, '0')}`;

function overlaps(a: FileMetaData, b: FileMetaData): boolean {
  const uk = (ik: Buffer): Buffer => ik.subarray(0, ik.length - TRAILER_BYTES);
  return Buffer.compare(uk(a.smallest), uk(b.largest)) <= 0 && Buffer.compare(uk(b.smallest), uk(a.largest)) <= 0;
}

/**
 * Moves file `f` from `level` one level down if that keeps the LSM order, first pushing an
 * overlapping file in the level below further down (recursively). A file may sit above only
 * older overlapping files: everything below L0 left L0 earlier, and only the oldest of any
 * overlapping L0 files may leave it.
 */
function pushDown(engine: Engine, level: number, f: FileMetaData, depth: number): boolean {
  if (level + 1 >= NUM_LEVELS) return false;
  const below = engine.levelFiles()[level + 1].filter((g) => overlaps(g, f));
  if (below.length > 1) return false;
  if (below.length === 1 && (depth > 5 || !pushDown(engine, level + 1, below[0], depth + 1))) return false;
  engine.applyVersionEdit(new VersionEdit().deleteFile(level, f.fileNumber).addFile(level + 1, f));
  return true;
}

/** Moves the oldest L0 file, or a random deeper file, one level down where the order allows. */
function tryTrivialMove(engine: Engine, r: () => number): boolean {
  const levels = engine.levelFiles();
  if (r() < 0.7) {
    const l0 = levels[0];
    if (l0.length === 0) return false;
    return pushDown(engine, 0, l0[l0.length - 1], 0);
  }
  const from = 1 + Math.floor(r() * (NUM_LEVELS - 2));
  const files = levels[from];
  if (files.length === 0) return false;
  return pushDown(engine, from, files[Math.floor(r() * files.length)], 0);
}

const EPOCH_STEPS = 1000;

const OPTIONS: EngineOptions = {
  writeBufferSizeBytes: 64 * 1024,
  maxImmutableMemtables: 2,
  flushSliceEntries: 64,
  blockCacheSizeBytes: 8 * 1024 * 1024,
  maxOpenFiles: 1000,
  table: { blockSizeBytes: 512 },
};

interface Counters {
  [op: string]: number;
}

async function runModel(seed: number, steps: number, dir: string): Promise<{ counts: Counters; filesPerLevel: string }> {
  const r = rng(seed);
  const model = new Model();
  let engine = await Engine.open(dir, OPTIONS);
  const snapshots: Snapshot[] = [];
  const counts: Counters = {};
  const bump = (op: string): void => {
    counts[op] = (counts[op] ?? 0) + 1;
  };
  const globalPhaseStart = Math.floor(steps * 0.9);
  let step = 0;
  const fail = (what: string, detail: unknown): never => {
    throw new Error(`seed ${seed} step ${step}: ${what}: ${JSON.stringify(detail)}`);
  };

  // Writes go to the current epoch's 12 keys (epochs are 20 key ids apart, so their ranges are
  // disjoint), and each epoch ends with a flush: files of different epochs never overlap.
  const epochOf = (): number => Math.floor(step / EPOCH_STEPS);
  const writeKey = (): string => {
    const base = epochOf() * 20;
    const i = step >= globalPhaseStart ? Math.floor(r() * (base + 12)) : base + Math.floor(r() * 12);
    return keyName(i);
  };
  const anyKey = (): string => keyName(Math.floor(r() * (epochOf() * 20 + 40)));
  const value = (): string => `v${step}-${'x'.repeat(Math.floor(r() * r() * 120))}`;
  const pickReadSeq = (): { seq: number; snapshot?: Snapshot } => {
    if (snapshots.length > 0 && r() < 0.3) {
      const s = snapshots[Math.floor(r() * snapshots.length)];
      return { seq: s.sequence, snapshot: s };
    }
    return { seq: engine.lastSequence };
  };
  const expectPosition = (it: DbIterator, want: [string, string] | undefined, what: string): void => {
    const got = it.valid() ? [it.key().toString(), it.value().toString()] : undefined;
    if (JSON.stringify(got) !== JSON.stringify(want)) fail(what, { got, want });
  };

  for (step = 0; step < steps; step++) {
    if (step % EPOCH_STEPS === 0 && step > 0) {
      await engine.flush();
      for (let m = 0; m < 4; m++) if (tryTrivialMove(engine, r)) bump('move');
    }
    const x = r();
    if (x < 0.33) {
      bump('put');
      const k = writeKey();
      const v = value();
      await engine.put(Buffer.from(k), Buffer.from(v));
      model.apply(k, v, ++model.seq);
    } else if (x < 0.43) {
      bump('delete');
      const k = writeKey();
      await engine.delete(Buffer.from(k));
      model.apply(k, null, ++model.seq);
    } else if (x < 0.48) {
      bump('batch');
      const b = new WriteBatch();
      const ops: Array<[string, string | null]> = [];
      const n = 1 + Math.floor(r() * 6);
      for (let i = 0; i < n; i++) {
        const k = writeKey();
        const y = r();
        if (y < 0.7) {
          const v = value();
          b.put(Buffer.from(k), Buffer.from(v));
          ops.push([k, v]);
        } else if (y < 0.95) {
          b.delete(Buffer.from(k));
          ops.push([k, null]);
        } else {
          // [k, k~) holds no other key of this test (all have the same length): it deletes k.
          b.deleteRange(Buffer.from(k), Buffer.from(k + '~'));
          ops.push([k, null]);
        }
      }
      await engine.write(b);
      for (const [k, v] of ops) model.apply(k, v, ++model.seq);
    } else if (x < 0.72) {
      bump('get');
      const k = r() < 0.8 ? anyKey() : `absent-${step}`;
      const { seq, snapshot } = pickReadSeq();
      const got = engine.get(Buffer.from(k), { snapshot });
      const want = model.get(k, seq);
      if ((got === null ? null : got.toString()) !== want) fail(`get ${k} at ${seq}`, { got: got?.toString() ?? null, want });
    } else if (x < 0.8) {
      bump('scan');
      const { seq, snapshot } = pickReadSeq();
      const a = r() < 0.8 ? anyKey() : null;
      const b = r() < 0.8 ? anyKey() : null;
      const [lower, upper] = a !== null && b !== null && a > b ? [b, a] : [a, b];
      const it = engine.newIterator({
        snapshot,
        lowerBound: lower === null ? undefined : Buffer.from(lower),
        upperBound: upper === null ? undefined : Buffer.from(upper),
      });
      const limit = 1 + Math.floor(r() * 25);
      const forward = r() < 0.5;
      const got: Array<[string, string]> = [];
      if (forward) {
        for (it.first(); it.valid() && got.length < limit; it.next()) got.push([it.key().toString(), it.value().toString()]);
      } else {
        for (it.last(); it.valid() && got.length < limit; it.prev()) got.push([it.key().toString(), it.value().toString()]);
      }
      const want = forward
        ? model.scan(seq, lower, upper, 0, 1, limit)
        : model.scan(seq, lower, upper, model.sortedKeys.length - 1, -1, limit);
      if (JSON.stringify(got) !== JSON.stringify(want))
        fail(`scan ${forward ? 'fwd' : 'rev'} [${lower}, ${upper}) at ${seq}`, { got, want });
      // Then wander: random next/prev/seeks against the model's positions.
      let pos = got.length === 0 ? -1 : model.sortedKeys.indexOf(got[got.length - 1][0]);
      if (got.length === limit && it.valid()) pos = model.sortedKeys.indexOf(it.key().toString());
      for (let j = 0; j < 6 && it.valid(); j++) {
        const dir: 1 | -1 = r() < 0.5 ? 1 : -1;
        if (dir > 0) it.next();
        else it.prev();
        const exp = model.scan(seq, lower, upper, pos + dir, dir, 1)[0];
        expectPosition(it, exp, `wander ${dir > 0 ? 'next' : 'prev'} [${lower}, ${upper}) at ${seq}`);
        if (exp === undefined) break;
        pos = model.sortedKeys.indexOf(exp[0]);
      }
      const t = anyKey();
      if (r() < 0.5) {
        it.seekGE(Buffer.from(t));
        expectPosition(it, model.scan(seq, lower, upper, model.lowerIndex(t), 1, 1)[0], `seekGE ${t} [${lower}, ${upper})`);
      } else {
        it.seekLT(Buffer.from(t));
        expectPosition(it, model.scan(seq, lower, upper, model.lowerIndex(t) - 1, -1, 1)[0], `seekLT ${t} [${lower}, ${upper})`);
      }
      if (r() < 0.3) {
        // Bounds may change between seeks.
        const nl = anyKey();
        it.setBounds(Buffer.from(nl), undefined);
        it.seekGE(Buffer.from(t));
        const from = model.lowerIndex(t > nl ? t : nl);
        expectPosition(it, model.scan(seq, nl, null, from, 1, 1)[0], `seekGE ${t} after setBounds [${nl}, -)`);
      }
      it.close();
    } else if (x < 0.83) {
      bump('seekRun');
      const { seq, snapshot } = pickReadSeq();
      const upper = r() < 0.3 ? anyKey() : null;
      const it = engine.newIterator({ snapshot, upperBound: upper === null ? undefined : Buffer.from(upper) });
      const useTry = r() < 0.7;
      let ti = Math.floor(r() * (epochOf() * 20 + 40));
      let first = true;
      for (let j = 0; j < 12; j++) {
        const t = keyName(ti);
        it.seekGE(Buffer.from(t), { trySeekUsingNext: useTry && !first });
        first = false;
        const want = model.scan(seq, null, upper, model.lowerIndex(t), 1, 1)[0];
        expectPosition(it, want, `seekGE${useTry ? ' (trySeekUsingNext)' : ''} ${t} <${upper} at ${seq}`);
        const nextTarget = ti + Math.floor(r() * r() * 60);
        // next() is allowed between seeks as long as it does not pass the next target.
        for (let n = 0; n < 2 && it.valid() && it.key().toString() < keyName(nextTarget); n++) {
          const before = model.lowerIndex(it.key().toString());
          it.next();
          expectPosition(it, model.scan(seq, null, upper, before + 1, 1, 1)[0], 'next inside a seek run');
        }
        ti = nextTarget;
      }
      it.close();
    } else if (x < 0.85) {
      bump('snapshot');
      if (snapshots.length < 5 && r() < 0.6) snapshots.push(engine.getSnapshot());
      else if (snapshots.length > 0) snapshots.splice(Math.floor(r() * snapshots.length), 1)[0].release();
    } else if (x < 0.851) {
      bump('flush');
      await engine.flush();
    } else if (x < 0.87) {
      if (tryTrivialMove(engine, r)) bump('move');
    } else if (x < 0.8706) {
      bump('reopen');
      for (const s of snapshots.splice(0)) s.release();
      await engine.close();
      engine = await Engine.open(dir, OPTIONS);
      if (engine.lastSequence !== model.seq) fail('sequence after reopen', { got: engine.lastSequence, want: model.seq });
    } else {
      // Let background flushes run, as an application's event loop would.
      bump('yield');
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (engine.lastSequence !== model.seq) fail('last sequence', { got: engine.lastSequence, want: model.seq });
  }

  // Final full comparison, after one more reopen.
  for (const s of snapshots.splice(0)) s.release();
  await engine.close();
  engine = await Engine.open(dir, OPTIONS);
  const it = engine.newIterator();
  const all: Array<[string, string]> = [];
  for (it.first(); it.valid(); it.next()) all.push([it.key().toString(), it.value().toString()]);
  it.close();
  const want = model.scan(model.seq, null, null, 0, 1, Number.MAX_SAFE_INTEGER);
  if (JSON.stringify(all) !== JSON.stringify(want)) fail('final scan', { got: all.length, want: want.length });
  const filesPerLevel = engine.stats().filesPerLevel.join('/');
  await engine.close();
  return { counts, filesPerLevel };
}

test('engine matches an in-memory model over 100k random operations', async () => {
  const seed = process.env.ENGINE_MODEL_SEED !== undefined ? Number(process.env.ENGINE_MODEL_SEED) : 0x5eed1;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-model-'));
  try {
    const started = Date.now();
    const steps = process.env.ENGINE_MODEL_STEPS !== undefined ? Number(process.env.ENGINE_MODEL_STEPS) : 100_000;
    const { counts, filesPerLevel } = await runModel(seed, steps, dir);
    // Printed so a run shows what it covered and how long it took.
    console.log(
      `engine model seed ${seed}: ${JSON.stringify(counts)}, files per level at the end ${filesPerLevel}, ${Date.now() - started} ms`,
    );
    expect(counts.move).toBeGreaterThan(20);
    expect(counts.reopen).toBeGreaterThan(10);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
