/**
 * Import crash test (issue 7): the whole `import --db` pipeline (support/importDbCrashChild.ts:
 * parse, sort and merge into SSTs in a scratch directory, open, conflict check, ingest) is
 * killed with SIGKILL at a random moment, 32 times over one database, each time importing a new
 * CSV that overwrites some earlier keys and adds new ones (--on-conflict overwrite). Kill delays
 * are drawn over 1.2 times a measured uninterrupted run, so kills land in every step, and some
 * after the end. After every kill the database is reopened and must
 *
 * - hold the trial's rows all with the trial's values, or none of them (every row's value names
 *   its trial, so any one visible decides that the trial landed): the whole database equals the
 *   model of the trials that landed, with or without this one;
 * - hold no orphan after that open: no scratch directory (.import-tmp-*) of the dead importer and
 *   no table file the manifest does not name.
 * And open removes only dead owners' scratch directories: a live importer may still be parsing.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn } from 'child_process';
import { Engine } from '../../src/engine/engine';
import { parseScratchDirName, scratchDirPrefix } from '../../src/engine/fileNames';
import { ownScratchDirPrefix } from '../../src/engine/scratchDirs';
import { mulberry32 } from '../../src/util/random';
import { REPO_ROOT } from '../support/paths';

const ROOT = REPO_ROOT;
const KILL_TRIALS = 32;
const NEW_ROWS_PER_TRIAL = 2000;
const OVERWRITES_PER_TRIAL = 1500;
/** An uninterrupted import re-times the run before every this many kill trials (the database grows). */
const RETIME_EVERY_TRIALS = 8;

const rng = mulberry32;

function keyName(id: number): string {
  return `k${String(id).padStart(7, '0')}`;
}

interface ChildOutcome {
  killed: boolean;
  /** Milliseconds from "ready" to exit. */
  runMs: number;
}

/** Runs one import; SIGKILLs it `killAfterMs` after it is ready (never when null). */
function runImport(db: string, csvPath: string, runsDir: string, killAfterMs: number | null): Promise<ChildOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--require',
        path.join(ROOT, 'test/support/swc-register.js'),
        path.join(ROOT, 'test/support/importDbCrashChild.ts'),
        db,
        csvPath,
        runsDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    let readyAt = 0;
    let timer: NodeJS.Timeout | null = null;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (readyAt === 0 && stdout.includes('ready\n')) {
        readyAt = performance.now();
        if (killAfterMs !== null) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      const runMs = readyAt === 0 ? 0 : performance.now() - readyAt;
      if (signal === 'SIGKILL') resolve({ killed: true, runMs });
      else if (code === 0 && stdout.includes('done\n')) resolve({ killed: false, runMs });
      else reject(new Error(`import child exited with ${code ?? signal}: ${stderr}`));
    });
  });
}

function writeCsv(file: string, rows: Map<string, string>): void {
  const lines = [...rows].map(([k, v]) => `${k},${v}`);
  fs.writeFileSync(file, `id,val\n${lines.join('\n')}\n`);
}

/** Trial `trial`'s rows: new keys from `nextId` on and overwrites of earlier keys, shuffled; every value names the trial. */
function trialRows(trial: number, nextId: number, existing: readonly string[], r: () => number): Map<string, string> {
  const ids: string[] = [];
  for (let i = 0; i < NEW_ROWS_PER_TRIAL; i++) ids.push(keyName(nextId + i));
  const picked = new Set<string>();
  for (let i = 0; i < OVERWRITES_PER_TRIAL && existing.length > 0; i++) picked.add(existing[Math.floor(r() * existing.length)]);
  ids.push(...picked);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const rows = new Map<string, string>();
  ids.forEach((k, j) => rows.set(k, `t${trial}-${j}`));
  return rows;
}

function scratchDirs(db: string): string[] {
  return fs.readdirSync(db).filter((n) => n.startsWith('.import-tmp-'));
}

/**
 * Opens `db`, checks that no orphan survived the open, and returns its whole contents and how
 * many table files the open deleted.
 */
async function openAndScan(db: string, trial: number): Promise<{ contents: Map<string, string>; orphansDeleted: number }> {
  const tablesBefore = fs.readdirSync(db).filter((n) => n.endsWith('.sst'));
  const engine = await Engine.open(db, { createIfMissing: false });
  try {
    const live = new Set<string>();
    for (const level of engine.levelFiles()) for (const f of level) live.add(`${String(f.fileNumber).padStart(6, '0')}.sst`);
    for (const name of fs.readdirSync(db)) {
      if (name.startsWith('.import-tmp-')) throw new Error(`trial ${trial}: scratch directory ${name} survived the open`);
      if (name.endsWith('.sst') && !live.has(name)) throw new Error(`trial ${trial}: orphan table ${name} survived the open`);
      if (name.endsWith('.dbtmp')) throw new Error(`trial ${trial}: temporary file ${name} survived the open`);
    }
    const contents = new Map<string, string>();
    const it = engine.newIterator();
    for (it.first(); it.valid(); it.next()) contents.set(it.key().toString(), it.value().toString());
    it.close();
    return { contents, orphansDeleted: tablesBefore.filter((n) => !live.has(n)).length };
  } finally {
    await engine.close();
  }
}

function expectSameContents(actual: Map<string, string>, expected: Map<string, string>, trial: number): void {
  let mismatch: string | null = actual.size === expected.size ? null : `size ${actual.size} vs ${expected.size}`;
  for (const [k, v] of expected) {
    if (mismatch !== null) break;
    if (actual.get(k) !== v) mismatch = `${k}: ${actual.get(k)} vs ${v}`;
  }
  if (mismatch !== null) throw new Error(`trial ${trial}: database differs from the model of landed trials (${mismatch})`);
}

test(`an import is wholly visible or not at all across ${KILL_TRIALS} SIGKILLs, and no scratch directory or orphan survives the next open`, async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-db-crash-'));
  const db = path.join(root, 'db');
  const runsDir = path.join(root, 'runs');
  fs.mkdirSync(runsDir);
  const r = rng(20241130);
  try {
    const model = new Map<string, string>();
    let nextId = 0;
    const nextTrialCsv = (trial: number): { rows: Map<string, string>; csv: string } => {
      const rows = trialRows(trial, nextId, [...model.keys()], r);
      nextId += NEW_ROWS_PER_TRIAL;
      const csv = path.join(root, `t${trial}.csv`);
      writeCsv(csv, rows);
      return { rows, csv };
    };
    // An uninterrupted import (new keys and overwrites, like the killed ones): lands, and says
    // how long a run takes at the database's current size. The first one creates the database.
    let timedTrials = 0;
    const timeUninterrupted = async (): Promise<number> => {
      const trial = -++timedTrials;
      const { rows, csv } = nextTrialCsv(trial);
      const outcome = await runImport(db, csv, runsDir, null);
      expect(outcome.killed).toBe(false);
      for (const [k, v] of rows) model.set(k, v);
      expectSameContents((await openAndScan(db, trial)).contents, model, trial);
      return outcome.runMs;
    };
    await timeUninterrupted();

    let runMs = 0;
    const stats = { landed: 0, notLanded: 0, completed: 0, scratchLeft: 0, scratchWithTables: 0, orphanTablesDeleted: 0 };
    for (let trial = 1; trial <= KILL_TRIALS; trial++) {
      if (trial % RETIME_EVERY_TRIALS === 1) runMs = await timeUninterrupted();
      const { rows, csv } = nextTrialCsv(trial);
      const outcome = await runImport(db, csv, runsDir, Math.floor(r() * 1.2 * runMs));
      fs.rmSync(csv);

      // What the kill left behind, before the open cleans it up.
      const left = scratchDirs(db);
      if (left.length > 0) stats.scratchLeft++;
      if (left.some((d) => fs.readdirSync(path.join(db, d)).some((n) => n.endsWith('.sst')))) stats.scratchWithTables++;
      const { contents: actual, orphansDeleted } = await openAndScan(db, trial);
      stats.orphanTablesDeleted += orphansDeleted;

      // Landed iff any of its rows is visible with its value; then all must be.
      let visible = 0;
      for (const [k, v] of rows) if (actual.get(k) === v) visible++;
      if (visible !== 0 && visible !== rows.size) throw new Error(`trial ${trial}: ${visible} of ${rows.size} rows visible`);
      const landed = visible === rows.size;
      if (!outcome.killed) {
        stats.completed++;
        expect(landed).toBe(true);
      }
      if (landed) {
        for (const [k, v] of rows) model.set(k, v);
        if (outcome.killed) stats.landed++;
      } else {
        stats.notLanded++;
      }
      expectSameContents(actual, model, trial);
    }
    // The kills must have exercised the cleanup: dead importers' scratch directories, some
    // holding finished SSTs, and trials both landed and not.
    expect(stats.scratchLeft).toBeGreaterThan(0);
    expect(stats.scratchWithTables).toBeGreaterThan(0);
    expect(stats.notLanded).toBeGreaterThan(0);
    expect(stats.landed + stats.completed).toBeGreaterThan(0);
    console.log(`import crash test: ${JSON.stringify(stats)}, uninterrupted import ${Math.round(runMs)} ms`);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}, 90_000);

test('open removes the scratch directories of dead owners only', async () => {
  const db = fs.mkdtempSync(path.join(os.tmpdir(), 'import-db-scratch-'));
  try {
    // A process that has exited: its pid is free (or reused by another start time).
    const dead = spawn(process.execPath, ['-e', '0']);
    const deadPid = await new Promise<number>((resolve) => dead.on('exit', () => resolve(dead.pid as number)));
    const own = fs.mkdtempSync(ownScratchDirPrefix(db));
    const ownOwner = parseScratchDirName(path.basename(own));
    expect(ownOwner?.pid).toBe(process.pid);
    const deadDir = fs.mkdtempSync(scratchDirPrefix(db, { pid: deadPid, startTime: '1' }));
    // Our pid with another start time: a reused pid, so the owner is gone.
    const reusedDir = fs.mkdtempSync(scratchDirPrefix(db, { pid: process.pid, startTime: `${Number(ownOwner?.startTime ?? 0) + 1}` }));
    const ownerless = path.join(db, '.import-tmp-abc123');
    for (const d of [own, deadDir, reusedDir, ownerless]) {
      fs.mkdirSync(d, { recursive: true });
      fs.writeFileSync(path.join(d, '000001.sst'), 'staged');
    }
    const engine = await Engine.open(db);
    await engine.close();
    const left = fs
      .readdirSync(db)
      .filter((n) => n.startsWith('.import-tmp-'))
      .sort();
    const expected = [path.basename(own), path.basename(ownerless)];
    // Where /proc gives no start time the reused pid counts as alive (erring towards keeping).
    if (ownOwner?.startTime === '-') expected.push(path.basename(reusedDir));
    expect(left).toEqual(expected.sort());
    expect(fs.readFileSync(path.join(own, '000001.sst'), 'utf8')).toBe('staged');
  } finally {
    fs.rmSync(db, { recursive: true, force: true });
  }
});
