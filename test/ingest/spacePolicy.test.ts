/**
 * Bounded space without a long-lived process (issue 37, item 1): the estimate of
 * engine/spaceAmplification.ts on level shapes, and the import's space policy (spacePolicy.ts)
 * over nights of overwrites and a replace range: with it the database stays within
 * --max-space-amp of the same data compacted (measured against a fully compacted copy), without
 * it the database grows with every night.
 */
import { tableBytes, trueSpaceAmplification } from '../support/spaceAmplification';
import type { DbImportJson } from '../../src/ingest/importJson';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { Engine } from '../../src/engine/engine';
import { FileMetaData } from '../../src/engine/versionEdit';
import { spaceAmplificationOf } from '../../src/engine/spaceAmplification';
import { settleSpace } from '../../src/ingest/spacePolicy';
import { makeInternalKey, ValueType } from '../../src/base/internalKey';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'space-policy-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function meta(fileNumber: number, sizeBytes: number, smallest: string, largest: string): FileMetaData {
  return {
    fileNumber,
    fileSizeBytes: sizeBytes,
    smallest: makeInternalKey(Buffer.from(smallest), 1, ValueType.Value),
    largest: makeInternalKey(Buffer.from(largest), 1, ValueType.Value),
    smallestSeq: 1,
    largestSeq: 1,
  };
}

function levels(byLevel: Record<number, FileMetaData[]>): FileMetaData[][] {
  return Array.from({ length: 7 }, (_, l) => byLevel[l] ?? []);
}

describe('the space amplification estimate', () => {
  test('all table bytes per byte of the last level with data, and the span above it', () => {
    expect(spaceAmplificationOf(levels({}))).toMatchObject({ estimate: 1, tableBytes: 0, lastLevel: -1, spanAbove: null });
    expect(spaceAmplificationOf(levels({ 6: [meta(1, 1000, 'a', 'm'), meta(2, 1000, 'n', 'z')] }))).toMatchObject({
      estimate: 1,
      lastLevel: 6,
      lastLevelBytes: 2000,
      spanAbove: null,
    });
    const amp = spaceAmplificationOf(levels({ 0: [meta(5, 500, 'c', 'd')], 3: [meta(4, 500, 'x', 'y')], 6: [meta(1, 2000, 'a', 'z')] }));
    expect(amp).toMatchObject({ estimate: 1.5, tableBytes: 3000, lastLevel: 6, lastLevelBytes: 2000 });
    expect(amp.spanAbove?.smallest.toString()).toBe('c');
    expect(amp.spanAbove?.largest.toString()).toBe('y');
    // Only L0: its largest file stands for the compacted data (L0 files overlap).
    expect(spaceAmplificationOf(levels({ 0: [meta(2, 300, 'a', 'z'), meta(1, 900, 'a', 'z')] }))).toMatchObject({
      estimate: 1.333,
      lastLevel: 0,
      lastLevelBytes: 900,
    });
  });
});

const ROWS = 4000;

function nightFile(night: number, rows = ROWS): string {
  const p = path.join(root, `orders-${String(night).padStart(2, '0')}.csv`);
  const lines = ['id,v'];
  // Every row changes every night: the worst case for space, each night overwrites all.
  for (let i = 0; i < rows; i++) lines.push(`${i},night-${night}-${i}-${'p'.repeat(40 + (i % 30))}`);
  fs.writeFileSync(p, `${lines.join('\n')}\n`);
  return p;
}

async function importNight(db: string, file: string, ...extra: string[]): Promise<DbImportJson> {
  const r = await runCli('import', file, '--db', db, '--header', '--key', 'id:int64', '--on-conflict', 'overwrite', '--json', ...extra);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(r.stdout) as DbImportJson;
}

describe('the import space policy', () => {
  test('nights of full overwrites stay within 1.3x of the compacted data; with the policy off they grow', async () => {
    const db = path.join(root, 'db');
    const off = path.join(root, 'db-off');
    const compactedAt: number[] = [];
    for (let night = 1; night <= 6; night++) {
      const file = nightFile(night);
      const r = await importNight(db, file);
      await importNight(off, file, '--max-space-amp', 'off');
      const amp = await trueSpaceAmplification(db, root);
      expect({ night, within: amp <= 1.3 }).toEqual({ night, within: true });
      expect(r.space?.amplificationAfter).toBeLessThanOrEqual(1.3);
      if (r.space?.steps.includes('amplification') === true) compactedAt.push(night);
      const stats = JSON.parse((await runCli('stats', '--db', db, '--json')).stdout);
      expect(stats.spaceAmplification.estimate).toBe(r.space?.amplificationAfter);
    }
    expect(compactedAt.length).toBeGreaterThan(0);
    expect(await trueSpaceAmplification(off, root)).toBeGreaterThan(2);
    const text = await runCli('stats', '--db', off);
    expect(text.stdout).toMatch(/space amplification: [2-9]\.[0-9]{3}x/);
  });

  test('a replace range that deletes most keys gets its range compacted, so the space goes at once', async () => {
    const db = path.join(root, 'db');
    await importNight(db, nightFile(1));
    const before = tableBytes(db);
    const r = await importNight(db, nightFile(2, ROWS / 10), '--replace-range', '0..100000');
    expect(r.space?.steps).toContain('replaced');
    expect(tableBytes(db)).toBeLessThan(before / 4);
    expect(await trueSpaceAmplification(db, root)).toBeLessThanOrEqual(1.3);
  });

  test('the budget decides whether a compaction starts; off does nothing', async () => {
    const db = path.join(root, 'db');
    await importNight(db, nightFile(1), '--max-space-amp', 'off');
    await importNight(db, nightFile(2), '--max-space-amp', 'off');
    const e = await Engine.open(db, { createIfMissing: false });
    try {
      let nowMs = 0;
      const spent = await settleSpace(e, { maxSpaceAmplification: 1.3, budgetMs: 1000, clockMs: () => (nowMs += 600) });
      expect(spent.steps).toEqual(['due']);
      expect(spent.budgetExhausted).toBe(true);
      expect(spent.amplificationAfter).toBeGreaterThan(1.3);
      const none = await settleSpace(e, { maxSpaceAmplification: null, budgetMs: 1000 });
      expect(none.steps).toEqual([]);
      const done = await settleSpace(e, { maxSpaceAmplification: 1.3, budgetMs: 60_000 });
      expect(done.steps).toEqual(['due', 'amplification']);
      expect(done.amplificationAfter).toBeLessThanOrEqual(1.05);
    } finally {
      await e.close();
    }
  });

  test('bad values are usage errors naming the option', async () => {
    const file = nightFile(1, 10);
    const db = path.join(root, 'db');
    for (const [flag, value] of [
      ['--max-space-amp', '0.9'],
      ['--max-space-amp', 'x'],
      ['--compact-budget', '5 minutes'],
    ]) {
      const r = await runCli('import', file, '--db', db, '--header', '--key', 'id:int64', flag, value);
      expect({ flag, code: r.code }).toEqual({ flag, code: 2 });
      expect(r.stderr).toContain(flag);
    }
    const noDb = await runCli('import', file, '--output-dir', path.join(root, 'out'), '--max-space-amp', '2');
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toContain('--max-space-amp');
  });
});
