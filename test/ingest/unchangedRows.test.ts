/**
 * Unchanged nights cost nothing (issue 37, item 7): rows holding the live value already are left
 * out of the ingestion. A night identical to the last ingests no file and leaves the database's
 * files as they were; a night changing a few rows ingests only those (and the new ones), under
 * every policy that ingests; a replace range keeps every row (its tombstone would otherwise
 * delete the unchanged ones).
 */
import { dbContents } from '../support/dbContents';
import type { DbImportJson } from '../../src/ingest/importJson';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { tableFileName } from '../../src/engine/fileNames';
import { TableReader } from '../../src/sstable/reader/tableReader';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'unchanged-rows-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const ROWS = 6000;

function night(name: string, values: Map<number, string>): string {
  const p = path.join(root, name);
  const lines = ['id,v'];
  for (const [id, v] of [...values].sort((a, b) => a[0] - b[0])) lines.push(`${id},${v}`);
  fs.writeFileSync(p, `${lines.join('\n')}\n`);
  return p;
}

async function importJson(db: string, file: string, ...extra: string[]): Promise<DbImportJson> {
  const r = await runCli('import', file, '--db', db, '--header', '--key', 'id:int64', '--json', ...extra);
  expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(r.stdout) as DbImportJson;
}

function tableFiles(db: string): string[] {
  return fs
    .readdirSync(db)
    .filter((n) => n.endsWith('.sst'))
    .sort();
}

describe('rows identical to the live value are left out of the ingestion', () => {
  const first = new Map<number, string>();
  for (let i = 0; i < ROWS; i++) first.set(i * 2, `value-${i}-${'x'.repeat(i % 50)}`);

  test('a night that changes nothing ingests no file and the database files stay as they were', async () => {
    const db = path.join(root, 'db');
    const n1 = await importJson(db, night('n1.csv', first));
    expect(n1.ingest?.files.length).toBeGreaterThan(0);
    const filesBefore = tableFiles(db);
    const before = await dbContents(db);
    const n2 = await importJson(db, night('n2.csv', first));
    expect(n2.check).toMatchObject({ new: 0, unchanged: ROWS, conflicts: 0 });
    expect(n2.ingest).toBeNull();
    expect(n2.policy).toMatchObject({ ingest: true, rowsUnchangedLeftOut: ROWS, unchangedFilesLeftOut: n1.ingest?.files.length });
    expect(tableFiles(db)).toEqual(filesBefore);
    expect(await dbContents(db)).toEqual(before);
    // The text output says why nothing went in.
    const text = await runCli('import', night('n3.csv', first), '--db', db, '--header', '--key', 'id:int64');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('nothing to ingest: every row holds the live value already');
  });

  test.each(['overwrite', 'skip'] as const)('under %s a night changing a few rows ingests only those and the new ones', async (policy) => {
    const db = path.join(root, `db-${policy}`);
    await importJson(db, night('n1.csv', first));
    const second = new Map(first);
    for (let i = 0; i < ROWS; i += 500) second.set(i * 2, `changed-${i}`);
    for (let i = 0; i < 40; i++) second.set(i * 2 + 1, `new-${i}`);
    const r = await importJson(db, night('n2.csv', second), '--on-conflict', policy);
    const changed = Math.ceil(ROWS / 500);
    expect(r.check).toMatchObject({ new: 40, unchanged: ROWS - changed, conflicts: changed });
    expect(r.policy.rowsUnchangedLeftOut).toBe(ROWS - changed);
    const ingestedEntries = (r.ingest?.files ?? []).reduce((n, f) => n + f.sizeBytes, 0);
    expect(ingestedEntries).toBeGreaterThan(0);
    const want = policy === 'overwrite' ? second : new Map([...first, ...[...second].filter(([k]) => !first.has(k))]);
    const got = await dbContents(db);
    expect(got.length).toBe(want.size);
    let ingestedRows = 0;
    for (const f of r.ingest?.files ?? []) {
      const reader = TableReader.open(tableFileName(db, f.fileNumber ?? -1));
      ingestedRows += reader.properties.numEntries;
      reader.close();
    }
    // Only the changed (overwrite) and new rows went in, not the unchanged ones.
    expect(ingestedRows).toBe(40 + (policy === 'overwrite' ? changed : 0));
    const values = got.map((line) => Buffer.from(line.split('=')[1], 'hex').toString());
    expect(values.sort()).toEqual([...want.values()].sort());
  });

  test('a replace range keeps every row: its tombstone would delete the unchanged ones', async () => {
    const db = path.join(root, 'db-replace');
    await importJson(db, night('n1.csv', first));
    const r = await importJson(db, night('n2.csv', first), '--replace-range');
    expect(r.policy.rowsUnchangedLeftOut).toBe(0);
    expect((await dbContents(db)).length).toBe(ROWS);
  });
});
