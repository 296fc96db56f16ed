/**
 * importIntoDb with a caller's engine (DbImportOptions.engine): the import lands in the engine the
 * caller holds open, which stays open and usable; a writer of that engine keeps writing during the
 * run under overwrite, and nothing it wrote is lost; an engine open elsewhere is refused.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { KeySpec, parseKeySpecText } from '../../src/ingest/rows/keySpec';
import { DbImportOptions, importIntoDb } from '../../src/ingest/importIntoDb';
import { FIXTURES_DIR } from '../support/paths';

const FIXTURE = path.join(FIXTURES_DIR, 'trades.csv');
const spec = KeySpec.forKeyFields(parseKeySpecText('t_id:int64'));
const key = (id: string | number): Buffer => spec.encodeText(String(id));

const fixtureRows = new Map<string, string>();
for (const line of fs.readFileSync(FIXTURE, 'utf8').split('\n').slice(1)) {
  if (line.length === 0) continue;
  const cut = line.indexOf('|');
  fixtureRows.set(line.slice(0, cut), line.slice(cut + 1));
}
const ids = [...fixtureRows.keys()];

const IMPORT: DbImportOptions['import'] = {
  inputs: [FIXTURE],
  dialect: { delimiter: '|' },
  header: true,
  key: 't_id:int64',
  valueFormat: 'raw',
};

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-db-engine-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

test('imports into the caller engine, overwrites a live value, and leaves the engine open', async () => {
  const dir = path.join(root, 'db');
  const e = await Engine.open(dir);
  try {
    await e.put(key(ids[0]), Buffer.from('old value'));
    await e.put(Buffer.from('unrelated'), Buffer.from('kept'));
    const r = await importIntoDb({ dbDir: dir, engine: e, import: IMPORT, onConflict: 'overwrite' });
    expect(r.createdDb).toBe(false);
    expect(r.report.summary.conflicts).toBe(1);
    expect(r.ingest).not.toBeNull();
    for (const id of [ids[0], ids[1], ids[ids.length - 1]]) expect(e.get(key(id))?.toString()).toBe(fixtureRows.get(id));
    expect(e.get(Buffer.from('unrelated'))?.toString()).toBe('kept');
    // Still open and writable: the run did not close it.
    await e.put(Buffer.from('after'), Buffer.from('x'));
    expect(e.get(Buffer.from('after'))?.toString()).toBe('x');
  } finally {
    await e.close();
  }
  // No private directory left behind.
  expect(fs.readdirSync(dir).filter((n) => n.startsWith('.import-tmp-'))).toEqual([]);
});

test('a writer keeps writing during the run under overwrite; every write and every imported row is readable', async () => {
  const dir = path.join(root, 'db');
  const e = await Engine.open(dir);
  let stop = false;
  let writes = 0;
  const writer = (async () => {
    while (!stop) {
      await e.put(Buffer.from(`w${String(writes).padStart(8, '0')}`), Buffer.from(String(writes)));
      writes++;
      if (writes % 16 === 0) await new Promise((r) => setImmediate(r));
    }
  })();
  try {
    const sequenceAtStart = e.lastSequence;
    const r = await importIntoDb({ dbDir: dir, engine: e, import: IMPORT, onConflict: 'overwrite' });
    stop = true;
    await writer;
    // The writer ran during the run: the check read at a later sequence than the run began at.
    expect(r.report.snapshotSequence).toBeGreaterThan(sequenceAtStart);
    expect(r.ingest?.files.length).toBeGreaterThan(0);
    for (let i = 0; i < writes; i++) expect(e.get(Buffer.from(`w${String(i).padStart(8, '0')}`))?.toString()).toBe(String(i));
    let imported = 0;
    for (const id of ids) if (e.get(key(id))?.toString() === fixtureRows.get(id)) imported++;
    expect(imported).toBe(ids.length);
  } finally {
    stop = true;
    await writer;
    await e.close();
  }
});

test('refuses an engine open at another directory, changing nothing', async () => {
  const e = await Engine.open(path.join(root, 'a'));
  try {
    const other = path.join(root, 'b');
    await expect(importIntoDb({ dbDir: other, engine: e, import: IMPORT, onConflict: 'overwrite' })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(fs.existsSync(other)).toBe(false);
    expect(e.get(key(ids[0]))).toBeNull();
  } finally {
    await e.close();
  }
});
