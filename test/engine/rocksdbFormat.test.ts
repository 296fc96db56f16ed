/**
 * The database directory in RocksDB's format (issue 17, part 2) without RocksDB's tools where
 * possible: a database of the engine's older manifest encoding (fixtures/legacy-db-v1, written
 * by the code before issue 17: puts, a delete, a range deletion, an ingested file with global
 * seqno 303, unflushed WAL records) is upgraded by its first open; the side files (IDENTITY,
 * OPTIONS) are written; another comparator is refused with the directory unchanged; RocksDB's
 * empty LOCK is taken over and put back. With ldb installed the upgraded directory is read by
 * RocksDB too.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { ManifestWriter, recoverManifest } from '../../src/engine/manifest';
import { LogReader } from '../../src/engine/wal/logReader';
import { FIXTURES_DIR } from '../support/paths';
import { LdbDatabase, rocksdbTools } from '../support/rocksdbTools';
import { snapshotDir } from '../support/dirSnapshot';

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rocksdb-format-'));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function scanAll(e: Engine): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  const it = e.newIterator();
  for (it.first(); it.valid(); it.next()) out.push([it.key().toString(), it.value().toString()]);
  it.close();
  return out;
}

/** What fixtures/legacy-db-v1 holds (see the generator's steps in the module comment). */
function legacyExpected(): Array<[string, string]> {
  const m = new Map<string, string>();
  for (let i = 0; i < 300; i++) m.set(`k${String(i).padStart(4, '0')}`, `v${i}`);
  m.delete('k0007');
  for (let i = 100; i < 120; i++) m.delete(`k0${i}`);
  for (let i = 50; i < 60; i++) m.set(`k00${i}`, `ingested${i}`);
  m.set('k0001', 'in-the-wal');
  m.delete('k0002');
  return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Top-level tags of every record in a manifest (first varint of each field is enough for 7 vs 103). */
function manifestRecordTags(file: string): number[][] {
  const tags: number[][] = [];
  LogReader.forEachRecord(file, (record) => tags.push([...record.subarray(0, 1)]));
  return tags;
}

describe('legacy manifest upgrade', () => {
  test('a database in the older encoding opens, reads the same, and is rewritten in RocksDB format', async () => {
    const dir = path.join(tmp, 'db');
    fs.cpSync(path.join(FIXTURES_DIR, 'legacy-db-v1'), dir, { recursive: true });
    // The fixture's manifest uses the legacy new-file tag 7 with the global-seqno custom field.
    const legacy = recoverManifest(dir);
    const ingested = legacy?.state.levels.flatMap((l) => [...l.values()]).find((f) => f.globalSeqno !== undefined);
    expect(ingested?.globalSeqno).toBe(303);
    expect(fs.existsSync(path.join(dir, 'IDENTITY'))).toBe(false);

    let e = await Engine.open(dir);
    expect(await scanAll(e)).toEqual(legacyExpected());
    await e.close();
    const names = fs.readdirSync(dir);
    expect(names.filter((n) => n.startsWith('OPTIONS-'))).toHaveLength(1);
    expect(fs.readFileSync(path.join(dir, 'IDENTITY'), 'latin1')).toMatch(/^[0-9a-f-]{36}$/);
    const manifest = names.find((n) => n.startsWith('MANIFEST-')) as string;
    // The snapshot record now starts with the comparator tag and holds no legacy tag 7 record.
    const after = recoverManifest(dir);
    expect(after?.state.levels.flatMap((l) => [...l.values()]).every((f) => f.globalSeqno === undefined)).toBe(true);
    expect(manifestRecordTags(path.join(dir, manifest))[0]).toEqual([1]);
    expect(fs.readFileSync(path.join(dir, manifest)).includes(Buffer.from([103]))).toBe(true);

    // Reopened from the new encoding: still the same contents, the ingested file read at 303.
    e = await Engine.open(dir);
    expect(await scanAll(e)).toEqual(legacyExpected());
    await e.close();
    if (rocksdbTools !== null) {
      const ldb = new LdbDatabase(dir, ['--compression_type=lz4']);
      expect(ldb.scan().map(([k, v]) => [k.toString(), v.toString()])).toEqual(legacyExpected());
      ldb.checkConsistency();
    }
  });
});

describe('RocksDB side files and refusals', () => {
  test('a new database gets IDENTITY and one OPTIONS file; reopening replaces the OPTIONS file', async () => {
    const dir = path.join(tmp, 'db');
    let e = await Engine.open(dir, { writeBufferSizeBytes: 1 << 20, table: { bloomBitsPerKey: 12 } });
    await e.put(Buffer.from('a'), Buffer.from('1'));
    await e.close();
    const id = fs.readFileSync(path.join(dir, 'IDENTITY'), 'latin1');
    const first = fs.readdirSync(dir).filter((n) => n.startsWith('OPTIONS-'));
    expect(first).toHaveLength(1);
    const text = fs.readFileSync(path.join(dir, first[0]), 'utf8');
    expect(text).toMatch(/\[CFOptions "default"\][^[]*write_buffer_size=1048576/);
    expect(text).toMatch(/filter_policy=bloomfilter:12:false/);
    e = await Engine.open(dir);
    await e.close();
    const second = fs.readdirSync(dir).filter((n) => n.startsWith('OPTIONS-'));
    expect(second).toHaveLength(1);
    expect(second[0]).not.toBe(first[0]);
    expect(fs.readFileSync(path.join(dir, 'IDENTITY'), 'latin1')).toBe(id);
  });

  test('another comparator is refused, naming it, with the directory unchanged byte for byte', async () => {
    const dir = path.join(tmp, 'db');
    const e = await Engine.open(dir);
    await e.put(Buffer.from('a'), Buffer.from('1'));
    await e.close();
    const state = recoverManifest(dir)?.state;
    if (state === undefined) throw new Error('no manifest');
    state.comparator = 'rocksdb.ReverseBytewiseComparator';
    ManifestWriter.create(dir, state.nextFileNumber++, state).close();
    const before = snapshotDir(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'NOT_SUPPORTED',
      message: expect.stringMatching(/comparator rocksdb\.ReverseBytewiseComparator/),
    });
    expect(snapshotDir(dir)).toEqual(before);
    // A user-defined-timestamp comparator is named as such.
    state.comparator = 'leveldb.BytewiseComparator.u64ts';
    ManifestWriter.create(dir, state.nextFileNumber++, state).close();
    const before2 = snapshotDir(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'NOT_SUPPORTED',
      message: expect.stringMatching(/user-defined timestamps \(comparator leveldb\.BytewiseComparator\.u64ts\)/),
    });
    expect(snapshotDir(dir)).toEqual(before2);
  });

  test("RocksDB's empty LOCK is taken over when unlocked and put back on close", async () => {
    const dir = path.join(tmp, 'db');
    let e = await Engine.open(dir);
    await e.close();
    fs.writeFileSync(path.join(dir, 'LOCK'), '');
    e = await Engine.open(dir);
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toMatch(/^\d+ \S+\n$/);
    await e.close();
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toBe('');
  });
});
