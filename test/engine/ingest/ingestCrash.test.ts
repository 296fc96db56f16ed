/**
 * Ingestion crash test: a child process (support/ingestCrashChild.ts) runs puts and multi-file
 * ingestions (some with replaceRange) and is killed with SIGKILL at random moments, 32 times
 * over one database: while writing its SSTs, linking them, flushing a memtable, logging the
 * manifest edit, or while still recovering. After every kill the database is reopened and must
 *
 * - equal the model after every acknowledged step, or after one step more (the one in flight):
 *   an ingestion is wholly visible or not at all, replaced ranges included;
 * - hold no orphan: every table file in the directory is one the manifest names (open deletes
 *   the files a crashed ingestion staged), and no temporary file is left.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runTsChildAndKill } from '../../support/killChild';
import { Engine } from '../../../src/engine/engine';
import { KEY_SPACE, keyName, modelAfter } from '../../support/ingestCrashChild';
import { mulberry32 } from '../../../src/util/random';
import { REPO_ROOT } from '../../support/paths';

const ROOT = REPO_ROOT;
const ROUNDS = 32;

const rng = mulberry32;

function sameContents(actual: Map<string, string>, expected: Map<string, string>): boolean {
  if (actual.size !== expected.size) return false;
  for (const [k, v] of expected) if (actual.get(k) !== v) return false;
  return true;
}

/** Reopens, checks files and contents; returns the number of steps the database holds. */
async function verify(dir: string, lastAcked: number, round: number, stats: { orphansDeleted: number }): Promise<number> {
  const tablesBefore = fs.readdirSync(dir).filter((n) => n.endsWith('.sst'));
  const engine = await Engine.open(dir);
  try {
    const live = new Set<string>();
    for (const level of engine.levelFiles()) for (const f of level) live.add(`${String(f.fileNumber).padStart(6, '0')}.sst`);
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith('.sst') && !live.has(name)) throw new Error(`round ${round}: orphan table ${name} survived the open`);
      if (name.endsWith('.dbtmp') || name.endsWith('.tmp')) throw new Error(`round ${round}: temporary file ${name} survived the open`);
    }
    stats.orphansDeleted += tablesBefore.filter((n) => !live.has(n)).length;
    const actual = new Map<string, string>();
    const it = engine.newIterator();
    for (it.first(); it.valid(); it.next()) actual.set(it.key().toString(), it.value().toString());
    it.close();
    for (let i = 0; i < KEY_SPACE; i++) {
      const k = keyName(i);
      const v = engine.get(Buffer.from(k));
      if ((v === null ? undefined : v.toString()) !== actual.get(k)) throw new Error(`round ${round}: get(${k}) disagrees with the scan`);
    }
    if (sameContents(actual, modelAfter(lastAcked))) return lastAcked;
    if (sameContents(actual, modelAfter(lastAcked + 1))) return lastAcked + 1;
    const show = (m: Map<string, string>): string => JSON.stringify([...m].sort());
    throw new Error(
      `round ${round}: contents match neither ${lastAcked} nor ${lastAcked + 1} steps:\n${show(actual)}\nvs\n${show(modelAfter(lastAcked))}`,
    );
  } finally {
    await engine.close();
  }
}

test(`an ingestion is wholly visible or not at all across ${ROUNDS} SIGKILLs, and no orphan survives`, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-ingest-crash-'));
  const dir = path.join(root, 'db');
  const staging = path.join(root, 'staging');
  fs.mkdirSync(staging);
  const r = rng(20240917);
  try {
    let held = 0; // steps the database holds
    let totalAcked = 0;
    let inFlightLanded = 0;
    const stats = { orphansDeleted: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      // One kill in six lands during startup (recovery, orphan deletion, manifest creation).
      const afterOpen = r() >= 1 / 6;
      const delay = afterOpen ? Math.floor(r() * 200) : Math.floor(r() * 400);
      const acked = await runTsChildAndKill(ROOT, 'test/support/ingestCrashChild.ts', [dir, staging, String(held + 1)], delay, afterOpen);
      for (let i = 0; i < acked.length; i++) expect(acked[i]).toBe(held + 1 + i);
      totalAcked += acked.length;
      const lastAcked = held + acked.length;
      held = await verify(dir, lastAcked, round, stats);
      if (held > lastAcked) inFlightLanded++;
    }
    // The rounds must have done real work, with ingestions among it.
    expect(totalAcked).toBeGreaterThan(ROUNDS);
    expect(held).toBeGreaterThan(10);
    // Some kills landed between staging the files and committing them.
    expect(stats.orphansDeleted).toBeGreaterThan(0);
    console.log(
      `ingest crash test: ${held} steps, ${totalAcked} acknowledged, ${inFlightLanded} in-flight steps landed, ${stats.orphansDeleted} orphan tables deleted`,
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
