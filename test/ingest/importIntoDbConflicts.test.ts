/**
 * importIntoDb (the library's convenience) when conflicts stop an import under the abort policy:
 * it rejects with an ImportConflictError (an IngestError with code CONFLICT, the CLI's exit code
 * 3) carrying the run's result, instead of resolving with `ingest: null` for the caller to notice.
 * `throwOnConflicts: false` and DbImport.run() resolve with that result (the CLI and the server
 * print it); a plan never throws; an import without conflicts resolves as before.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { DbImport, DbImportOptions, ImportConflictError, importIntoDb } from '../../src/ingest/importIntoDb';
import { IngestError, exitCodeFor } from '../../src/util/errors';

let root: string;
let dbDir: string;
beforeEach(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-db-conflicts-'));
  dbDir = path.join(root, 'db');
  // The first night: k1 and k2.
  await importIntoDb({ dbDir, import: night('first.csv', 'k1,one\nk2,two\n') });
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function night(name: string, csv: string): DbImportOptions['import'] {
  const file = path.join(root, name);
  fs.writeFileSync(file, csv);
  return { inputs: [file], key: '1' };
}

/** k2's value changed, k3 new. */
const CHANGED = 'k2,TWO\nk3,three\n';

async function valuesOf(keys: string[]): Promise<Array<string | null>> {
  const e = await Engine.open(dbDir);
  try {
    return keys.map((k) => e.get(k)?.toString() ?? null);
  } finally {
    await e.close();
  }
}

test('conflicts under abort reject with ImportConflictError (CONFLICT, exit 3) carrying the result; nothing is ingested', async () => {
  const run = importIntoDb({ dbDir, onConflict: 'abort', import: night('second.csv', CHANGED) });
  const err: unknown = await run.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImportConflictError);
  expect(err).toBeInstanceOf(IngestError);
  const conflict = err as ImportConflictError;
  expect(conflict.code).toBe('CONFLICT');
  expect(exitCodeFor(conflict)).toBe(3);
  expect(conflict.message).toMatch(/1 key\(s\) would change a live value.*nothing ingested.*first: key k2 \(.*second\.csv line 1\)/);
  expect(conflict.result.policy).toMatchObject({ onConflict: 'abort', ingest: false });
  expect(conflict.result.ingest).toBeNull();
  expect(conflict.result.report.summary.conflicts).toBe(1);
  expect(conflict.result.report.conflicts[0].key).toBe('k2');
  expect(await valuesOf(['k2', 'k3'])).toEqual(['two', null]);
});

test('the same with a caller engine, which stays open', async () => {
  const engine = await Engine.open(dbDir);
  try {
    await expect(importIntoDb({ dbDir, engine, onConflict: 'abort', import: night('second.csv', CHANGED) })).rejects.toBeInstanceOf(
      ImportConflictError,
    );
    expect(engine.get('k3')).toBeNull();
    await engine.put('k4', 'still open');
  } finally {
    await engine.close();
  }
});

test('throwOnConflicts: false and DbImport.run() resolve with the result; a plan resolves', async () => {
  const kept = await importIntoDb({ dbDir, onConflict: 'abort', import: night('second.csv', CHANGED), throwOnConflicts: false });
  expect(kept.policy.ingest).toBe(false);
  expect(kept.ingest).toBeNull();
  const run = await new DbImport({ dbDir, onConflict: 'abort', import: night('third.csv', CHANGED) }).run();
  expect(run.policy.ingest).toBe(false);
  const plan = await importIntoDb({ dbDir, onConflict: 'abort', dryRun: true, import: night('plan.csv', CHANGED) });
  expect(plan.report.summary.conflicts).toBe(1);
  expect(await valuesOf(['k2', 'k3'])).toEqual(['two', null]);
});

test('no conflicts, or a policy that goes on: resolves and ingests', async () => {
  const fresh = await importIntoDb({ dbDir, onConflict: 'abort', import: night('fresh.csv', 'k5,five\n') });
  expect(fresh.ingest?.files.length).toBe(1);
  const over = await importIntoDb({ dbDir, onConflict: 'overwrite', import: night('over.csv', CHANGED) });
  expect(over.ingest).not.toBeNull();
  expect(await valuesOf(['k2', 'k3', 'k5'])).toEqual(['TWO', 'three', 'five']);
});
