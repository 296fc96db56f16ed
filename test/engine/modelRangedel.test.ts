/**
 * Randomized model test of the engine with range deletions and compactions: a seeded sequence of
 * operations (puts, deletes, deleteRange narrow / medium / wide, batches mixing them, gets, bounded
 * scans both ways with wandering and seeks, snapshots, long-lived iterators kept open across
 * flushes and compactions, manual compactions of random ranges, reopens) checked against an
 * in-memory model after every step, with background compactions running all along on small level
 * targets, so tombstones cross memtables, L0 files, file boundaries inside levels and level
 * boundaries, and are dropped at the bottom. A failure names its seed and step; rerun one seed
 * with ENGINE_MODEL_SEED=<seed> (and ENGINE_MODEL_STEPS=<n>).
 *
 * The model applies a range deletion [s, e)@q as a point deletion at q of every key in [s, e)
 * written so far: every version written before it has a smaller sequence number and every later
 * one a larger, so this is exactly the engine's rule (a tombstone deletes covered versions with
 * smaller sequence numbers, for reads at or after it).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine, EngineOptions, Snapshot } from '../../src/engine/engine';
import { DbIterator } from '../../src/engine/dbIterator';
import { WriteBatch } from '../../src/engine/writeBatch';
import { isExclusiveSentinel } from '../../src/engine/rangedel/tombstoneBoundaries';
import { mulberry32 } from '../../src/util/random';
import { Model } from '../support/engineModel';

const rng = mulberry32;

const KEY_SPACE = 6000;
const keyName = (i: number): string => `k${String(i).padStart(6, '0')}`;

const OPTIONS: EngineOptions = {
  writeBufferSizeBytes: 32 * 1024,
  maxImmutableMemtables: 2,
  flushSliceEntries: 64,
  compactionSliceEntries: 64,
  level0FileNumCompactionTrigger: 3,
  level0StopWritesTrigger: 8,
  maxBytesForLevelBase: 16 * 1024,
  maxBytesForLevelMultiplier: 2,
  targetFileSizeBytes: 4 * 1024,
  // Small caches, so table readers and blocks are evicted while iterators hold them.
  blockCacheSizeBytes: 64 * 1024,
  maxOpenFiles: 16,
  table: { blockSizeBytes: 512 },
};

/** An iterator kept open across other operations, with where the model says it stands. */
interface HeldIterator {
  it: DbIterator;
  seq: number;
  /** The current key (model.sortedKeys grows meanwhile, so no index is kept). */
  key: string;
  snapshot?: Snapshot;
}

async function runModel(seed: number, steps: number, dir: string): Promise<Record<string, number>> {
  const r = rng(seed);
  const model = new Model();
  let engine = await Engine.open(dir, OPTIONS);
  const snapshots: Snapshot[] = [];
  const held: HeldIterator[] = [];
  const counts: Record<string, number> = {};
  const bump = (op: string, n = 1): void => {
    counts[op] = (counts[op] ?? 0) + n;
  };
  let step = 0;
  const fail = (what: string, detail: unknown): never => {
    throw new Error(`seed ${seed} step ${step}: ${what}: ${JSON.stringify(detail)}`);
  };

  // Writes favour a window sliding over the key space, so files cover different ranges.
  const window = (): number => Math.floor((step / steps) * (KEY_SPACE - 600));
  const writeKeyIndex = (): number => (r() < 0.8 ? window() + Math.floor(r() * 600) : Math.floor(r() * KEY_SPACE));
  const anyKey = (): string => keyName(Math.floor(r() * KEY_SPACE));
  const value = (): string => `v${step}-${'x'.repeat(Math.floor(r() * r() * 160))}`;
  /** A range: narrow (1-3 keys), medium (10-100) or wide (up to the whole key space). */
  const range = (): [string, string] => {
    const y = r();
    const width = y < 0.6 ? 1 + Math.floor(r() * 3) : y < 0.97 ? 10 + Math.floor(r() * 60) : 200 + Math.floor(r() * r() * KEY_SPACE);
    const from = y < 0.97 ? writeKeyIndex() : Math.floor(r() * KEY_SPACE);
    return [keyName(from), keyName(Math.min(KEY_SPACE + 1, from + width))];
  };
  const pickReadSeq = (): { seq: number; snapshot?: Snapshot } => {
    if (snapshots.length > 0 && r() < 0.35) {
      const s = snapshots[Math.floor(r() * snapshots.length)];
      return { seq: s.sequence, snapshot: s };
    }
    return { seq: engine.lastSequence };
  };
  const expectPosition = (it: DbIterator, want: [string, string] | undefined, what: string): void => {
    const got = it.valid() ? [it.key().toString(), it.value().toString()] : undefined;
    if (JSON.stringify(got) !== JSON.stringify(want)) fail(what, { got, want });
  };
  /** Adds the engine's compaction counters to `counts` (before it closes: they restart at open). */
  const collectStats = (): void => {
    const stats = engine.stats();
    bump('compactions', stats.compaction.count);
    bump('trivialMoves', stats.compaction.trivialMoves);
    bump('compactionConflicts', stats.compaction.conflicts);
    bump('tombstonesDropped', stats.compaction.tombstonesDropped);
    bump('level0WriteStalls', stats.level0WriteStalls);
    counts.deepestLevel = Math.max(
      counts.deepestLevel ?? 0,
      stats.filesPerLevel.reduce((d, n, level) => (n > 0 ? level : d), 0),
    );
  };
  const closeHeld = (): void => {
    for (const h of held.splice(0)) h.it.close();
  };
  const countSentinelFiles = (): number => {
    let n = 0;
    for (const files of engine.levelFiles()) for (const f of files) if (isExclusiveSentinel(f.largest)) n++;
    return n;
  };

  for (step = 0; step < steps; step++) {
    const x = r();
    if (x < 0.3) {
      bump('put');
      const k = keyName(writeKeyIndex());
      const v = value();
      await engine.put(Buffer.from(k), Buffer.from(v));
      model.apply(k, v, ++model.seq);
    } else if (x < 0.37) {
      bump('delete');
      const k = keyName(writeKeyIndex());
      await engine.delete(Buffer.from(k));
      model.apply(k, null, ++model.seq);
    } else if (x < 0.42) {
      bump('deleteRange');
      const [s, e] = range();
      await engine.deleteRange(Buffer.from(s), Buffer.from(e));
      bump('keysRangeDeleted', model.deleteRange(s, e, ++model.seq));
    } else if (x < 0.45) {
      bump('batch');
      const b = new WriteBatch();
      const ops: Array<() => void> = [];
      const n = 1 + Math.floor(r() * 6);
      for (let i = 0; i < n; i++) {
        const y = r();
        if (y < 0.6) {
          const k = keyName(writeKeyIndex());
          const v = value();
          b.put(Buffer.from(k), Buffer.from(v));
          ops.push(() => model.apply(k, v, ++model.seq));
        } else if (y < 0.8) {
          const k = keyName(writeKeyIndex());
          b.delete(Buffer.from(k));
          ops.push(() => model.apply(k, null, ++model.seq));
        } else {
          const [s, e] = range();
          b.deleteRange(Buffer.from(s), Buffer.from(e));
          ops.push(() => void model.deleteRange(s, e, ++model.seq));
        }
      }
      await engine.write(b);
      for (const op of ops) op();
    } else if (x < 0.63) {
      bump('get');
      const k = anyKey();
      const { seq, snapshot } = pickReadSeq();
      const got = engine.get(Buffer.from(k), { snapshot });
      const want = model.get(k, seq);
      if ((got === null ? null : got.toString()) !== want) fail(`get ${k} at ${seq}`, { got: got?.toString() ?? null, want });
    } else if (x < 0.71) {
      bump('scan');
      const { seq, snapshot } = pickReadSeq();
      const a = r() < 0.7 ? anyKey() : null;
      const b = r() < 0.7 ? anyKey() : null;
      const [lower, upper] = a !== null && b !== null && a > b ? [b, a] : [a, b];
      const it = engine.newIterator({
        snapshot,
        lowerBound: lower === null ? undefined : Buffer.from(lower),
        upperBound: upper === null ? undefined : Buffer.from(upper),
      });
      const limit = 1 + Math.floor(r() * 30);
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
      let pos = got.length === 0 ? -1 : model.lowerIndex(got[got.length - 1][0]);
      if (got.length === limit && it.valid()) pos = model.lowerIndex(it.key().toString());
      for (let j = 0; j < 8 && it.valid(); j++) {
        const dir: 1 | -1 = r() < 0.5 ? 1 : -1;
        if (dir > 0) it.next();
        else it.prev();
        const exp = model.scan(seq, lower, upper, pos + dir, dir, 1)[0];
        expectPosition(it, exp, `wander ${dir > 0 ? 'next' : 'prev'} [${lower}, ${upper}) at ${seq}`);
        if (exp === undefined) break;
        pos = model.lowerIndex(exp[0]);
      }
      const t = anyKey();
      if (r() < 0.5) {
        it.seekGE(Buffer.from(t));
        expectPosition(it, model.scan(seq, lower, upper, model.lowerIndex(t), 1, 1)[0], `seekGE ${t} [${lower}, ${upper})`);
      } else {
        it.seekLT(Buffer.from(t));
        expectPosition(it, model.scan(seq, lower, upper, model.lowerIndex(t) - 1, -1, 1)[0], `seekLT ${t} [${lower}, ${upper})`);
      }
      it.close();
    } else if (x < 0.73) {
      bump('seekRun');
      const { seq, snapshot } = pickReadSeq();
      const it = engine.newIterator({ snapshot });
      const useTry = r() < 0.7;
      let ti = Math.floor(r() * KEY_SPACE);
      for (let j = 0; j < 12; j++) {
        const t = keyName(ti);
        it.seekGE(Buffer.from(t), { trySeekUsingNext: useTry && j > 0 });
        expectPosition(
          it,
          model.scan(seq, null, null, model.lowerIndex(t), 1, 1)[0],
          `seekGE${useTry ? ' (trySeekUsingNext)' : ''} ${t} at ${seq}`,
        );
        ti += Math.floor(r() * r() * 200);
      }
      it.close();
    } else if (x < 0.76) {
      // Long-lived iterators: opened now, moved now and then while writes, flushes and
      // compactions go on; they must keep reading their own version at their own sequence.
      if (held.length < 2 && r() < 0.3) {
        bump('holdIterator');
        const { seq, snapshot } = pickReadSeq();
        const it = engine.newIterator({ snapshot });
        const t = anyKey();
        it.seekGE(Buffer.from(t));
        const want = model.scan(seq, null, null, model.lowerIndex(t), 1, 1)[0];
        expectPosition(it, want, `held seekGE ${t} at ${seq}`);
        if (want === undefined) it.close();
        else held.push({ it, seq, key: want[0], snapshot });
      } else if (held.length > 0) {
        bump('moveHeldIterator');
        const i = Math.floor(r() * held.length);
        const h = held[i];
        for (let j = 0; j < 10; j++) {
          const dir: 1 | -1 = r() < 0.6 ? 1 : -1;
          if (dir > 0) h.it.next();
          else h.it.prev();
          const exp = model.scan(h.seq, null, null, model.lowerIndex(h.key) + dir, dir, 1)[0];
          expectPosition(h.it, exp, `held iterator ${dir > 0 ? 'next' : 'prev'} at ${h.seq}`);
          if (exp === undefined) {
            h.it.close();
            held.splice(i, 1);
            break;
          }
          h.key = exp[0];
        }
      }
    } else if (x < 0.78) {
      bump('snapshot');
      if (snapshots.length < 5 && r() < 0.6) snapshots.push(engine.getSnapshot());
      else if (snapshots.length > 0) snapshots.splice(Math.floor(r() * snapshots.length), 1)[0].release();
    } else if (x < 0.7825) {
      bump('flush');
      await engine.flush();
    } else if (x < 0.7855) {
      bump('compactRange');
      if (r() < 0.3) {
        await engine.compactRange();
      } else {
        const [a, b] = [anyKey(), anyKey()].sort();
        await engine.compactRange(Buffer.from(a), Buffer.from(b));
      }
      bump('sentinelEndedFiles', countSentinelFiles());
    } else if (x < 0.7862) {
      bump('reopen');
      closeHeld();
      for (const s of snapshots.splice(0)) s.release();
      collectStats();
      await engine.close();
      engine = await Engine.open(dir, OPTIONS);
      if (engine.lastSequence !== model.seq) fail('sequence after reopen', { got: engine.lastSequence, want: model.seq });
    } else {
      // Let background flushes and compactions run, as an application's event loop would.
      bump('yield');
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (engine.lastSequence !== model.seq) fail('last sequence', { got: engine.lastSequence, want: model.seq });
  }

  // Final: a full compaction under the held iterators, which must still read their versions;
  // then every key by get and full scans both ways, after a reopen.
  await engine.compactRange();
  for (const h of held) {
    h.it.prev();
    expectPosition(
      h.it,
      model.scan(h.seq, null, null, model.lowerIndex(h.key) - 1, -1, 1)[0],
      `held iterator after the final compaction at ${h.seq}`,
    );
  }
  closeHeld();
  for (const s of snapshots.splice(0)) s.release();
  await engine.compactRange();
  collectStats();
  bump(
    'filesAfterFullCompaction',
    engine.stats().filesPerLevel.reduce((a, b) => a + b, 0),
  );
  // A full compaction with no snapshot left drops every tombstone.
  if (engine.rangeTombstones().length !== 0) fail('tombstones after a full compaction', engine.rangeTombstones().length);
  await engine.close();
  engine = await Engine.open(dir, OPTIONS);
  const want = model.scan(model.seq, null, null, 0, 1, Number.MAX_SAFE_INTEGER);
  const fwd: Array<[string, string]> = [];
  const it = engine.newIterator();
  for (it.first(); it.valid(); it.next()) fwd.push([it.key().toString(), it.value().toString()]);
  const rev: Array<[string, string]> = [];
  for (it.last(); it.valid(); it.prev()) rev.push([it.key().toString(), it.value().toString()]);
  it.close();
  if (JSON.stringify(fwd) !== JSON.stringify(want)) fail('final forward scan', { got: fwd.length, want: want.length });
  if (JSON.stringify(rev.reverse()) !== JSON.stringify(want)) fail('final backward scan', { got: rev.length, want: want.length });
  for (const k of model.sortedKeys) {
    const got = engine.get(Buffer.from(k));
    if ((got === null ? null : got.toString()) !== model.get(k, model.seq)) fail(`final get ${k}`, { got: got?.toString() ?? null });
  }
  await engine.close();
  return counts;
}

test('engine with range deletions and compactions matches an in-memory model', async () => {
  const seed = process.env.ENGINE_MODEL_SEED !== undefined ? Number(process.env.ENGINE_MODEL_SEED) : 0x7a9e5;
  const steps = process.env.ENGINE_MODEL_STEPS !== undefined ? Number(process.env.ENGINE_MODEL_STEPS) : 60_000;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-model-rangedel-'));
  try {
    const started = Date.now();
    const counts = await runModel(seed, steps, dir);
    console.log(`engine rangedel model seed ${seed}: ${JSON.stringify(counts)}, ${Date.now() - started} ms`);
    if (steps >= 60_000) {
      // The run covered what it is for.
      expect(counts.deleteRange).toBeGreaterThan(2000);
      expect(counts.compactions).toBeGreaterThan(50);
      expect(counts.compactRange).toBeGreaterThan(50);
      expect(counts.tombstonesDropped).toBeGreaterThan(100);
      expect(counts.sentinelEndedFiles).toBeGreaterThan(0);
      expect(counts.deepestLevel).toBeGreaterThanOrEqual(3);
      expect(counts.moveHeldIterator).toBeGreaterThan(100);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
