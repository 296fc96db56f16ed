/**
 * Helpers for the conflict tests: a seeded engine builder that spreads versions of keys over
 * deeper levels, L0 and the memtable (with point and range deletions and snapshots), a model
 * that answers what is live at any sequence number by brute force, and SST set writers.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine, Snapshot } from '../../src/engine/engine';
import { VersionEdit } from '../../src/engine/versionEdit';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { mulberry32 } from '../../src/util/random';

export const rng = mulberry32;

export function intBelow(r: () => number, n: number): number {
  return Math.floor(r() * n);
}

export function keyOf(i: number): string {
  return `k${String(i).padStart(5, '0')}`;
}

type Op =
  | { kind: 'put'; key: string; value: string; seq: number }
  | { kind: 'del'; key: string; seq: number }
  | { kind: 'rdel'; start: string; end: string; seq: number };

/** Every write, with its sequence number; answers reads by brute force. */
export class Model {
  readonly ops: Op[] = [];

  /** True when the newest point write of `key` at `readSeq` is a put (live unless range-deleted). */
  newestPointIsPut(key: string, readSeq: number): boolean {
    let newest: Op | null = null;
    for (const op of this.ops) {
      if (op.seq > readSeq || op.kind === 'rdel' || op.key !== key) continue;
      if (newest === null || op.seq > newest.seq) newest = op;
    }
    return newest !== null && newest.kind === 'put';
  }

  /** The live value of `key` at `readSeq` and its sequence number, or null. */
  visible(key: string, readSeq: number): { value: string; seq: number } | null {
    let newest: Op | null = null;
    for (const op of this.ops) {
      if (op.seq > readSeq || op.kind === 'rdel' || op.key !== key) continue;
      if (newest === null || op.seq > newest.seq) newest = op;
    }
    if (newest === null || newest.kind !== 'put') return null;
    const putSeq = newest.seq;
    for (const op of this.ops) {
      if (op.kind === 'rdel' && op.seq > putSeq && op.seq <= readSeq && op.start <= key && key < op.end) return null;
    }
    return { value: newest.value, seq: putSeq };
  }
}

export interface BuiltEngine {
  engine: Engine;
  model: Model;
  /** Snapshots taken at random points while building, with their sequence numbers. */
  snapshots: Snapshot[];
  /** Keys 0..universe-1 (keyOf) were written to. */
  universe: number;
}

export interface BuildOptions {
  universe: number;
  /** Writes per phase. */
  writesPerPhase: number;
  rangeDeletes: boolean;
  snapshots: number;
}

/**
 * Phases, oldest first: each writes, then is flushed and its file moved to a deeper level (L6,
 * L5, two disjoint files in L4, L2), then two phases stay in L0, and the last stays in the
 * memtable. A newer phase's file always sits above an older one's, as the LSM order requires.
 */
export async function buildEngine(dir: string, seed: number, o: BuildOptions): Promise<BuiltEngine> {
  const r = rng(seed);
  // No background compaction: the test places files in levels itself.
  const engine = await Engine.open(dir, { table: { blockSizeBytes: 256 }, disableAutoCompactions: true });
  const model = new Model();
  const snapshots: Snapshot[] = [];
  const totalPhases = 8;
  const snapshotAt = new Set<number>();
  while (snapshotAt.size < o.snapshots) snapshotAt.add(intBelow(r, totalPhases * o.writesPerPhase));
  let writeNo = 0;
  const writePhase = async (lo: number, hi: number): Promise<void> => {
    for (let i = 0; i < o.writesPerPhase; i++) {
      if (snapshotAt.has(writeNo++)) snapshots.push(engine.getSnapshot());
      const x = r();
      const k = lo + intBelow(r, hi - lo);
      if (o.rangeDeletes && x < 0.05) {
        const end = Math.min(hi, k + 1 + intBelow(r, 12));
        await engine.deleteRange(Buffer.from(keyOf(k)), Buffer.from(keyOf(end)));
        model.ops.push({ kind: 'rdel', start: keyOf(k), end: keyOf(end), seq: engine.lastSequence });
      } else if (x < 0.2) {
        await engine.delete(Buffer.from(keyOf(k)));
        model.ops.push({ kind: 'del', key: keyOf(k), seq: engine.lastSequence });
      } else {
        const value = `v${intBelow(r, 4)}`;
        await engine.put(Buffer.from(keyOf(k)), Buffer.from(value));
        model.ops.push({ kind: 'put', key: keyOf(k), value, seq: engine.lastSequence });
      }
    }
  };
  const flushTo = async (level: number): Promise<void> => {
    await engine.flush();
    if (level === 0) return;
    const l0 = engine.levelFiles()[0];
    if (l0.length === 0) return; // the phase left nothing (cannot happen with writes, but be safe)
    const f = l0[0];
    engine.applyVersionEdit(new VersionEdit().deleteFile(0, f.fileNumber).addFile(level, f));
  };
  const u = o.universe;
  const half = Math.floor(u / 2);
  await writePhase(0, u);
  await flushTo(6);
  await writePhase(0, u);
  await flushTo(5);
  await writePhase(0, half);
  await flushTo(4);
  await writePhase(half, u);
  await flushTo(4);
  await writePhase(0, u);
  await flushTo(2);
  await writePhase(0, u);
  await flushTo(0);
  await writePhase(0, u);
  await flushTo(0);
  await writePhase(0, u);
  return { engine, model, snapshots, universe: u };
}

/** Writes sorted rows as `files` SSTs (split at random points) under dir; returns their paths. */
export function writeSstSet(dir: string, rows: Array<[string, string]>, files: number, r: () => number, blockSizeBytes = 256): string[] {
  const sorted = rows.slice().sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const cuts = new Set<number>();
  while (cuts.size < Math.min(files - 1, Math.max(0, sorted.length - 1))) cuts.add(1 + intBelow(r, sorted.length - 1));
  const bounds = [0, ...[...cuts].sort((a, b) => a - b), sorted.length];
  fs.mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    if (bounds[i] === bounds[i + 1]) continue;
    const p = path.join(dir, `${String(i + 1).padStart(6, '0')}.sst`);
    const w = new SstFileWriter(p, { blockSizeBytes, backgroundCompression: false });
    for (let j = bounds[i]; j < bounds[i + 1]; j++) w.put(Buffer.from(sorted[j][0]), Buffer.from(sorted[j][1]));
    w.finish();
    paths.push(p);
  }
  return paths;
}

export interface Expected {
  sstKeys: number;
  new: number;
  /** Of the new keys, those whose newest version is a put hidden by a newer range tombstone. */
  rangeDeleted: number;
  unchanged: number;
  conflicts: Array<{ key: string; existing: string; existingSeq: number; fresh: string }>;
}

/** The brute-force answer for rows against the model at readSeq. */
export function expectedOutcome(model: Model, rows: Array<[string, string]>, readSeq: number): Expected {
  const sorted = rows.slice().sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const e: Expected = { sstKeys: rows.length, new: 0, rangeDeleted: 0, unchanged: 0, conflicts: [] };
  for (const [key, fresh] of sorted) {
    const v = model.visible(key, readSeq);
    if (v === null) {
      e.new++;
      if (model.newestPointIsPut(key, readSeq)) e.rangeDeleted++;
    } else if (v.value === fresh) e.unchanged++;
    else e.conflicts.push({ key, existing: v.value, existingSeq: v.seq, fresh });
  }
  return e;
}
