/**
 * `ingest put | get | delete | delete-range | scan | stats | compact` end to end through the CLI
 * entry point (in-process): values read back, scan bounds, limit and direction against a model,
 * the hex and key-spec codecs, the JSON shapes scripts depend on, exit codes, and the LOCK.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { MAX_REPLAYED_LOGS_BEFORE_FLUSH } from '../../cli/commands/db';
import { Engine } from '../../src/engine/engine';

const run = runCli;

function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const key = (i: number): string => `k${String(i).padStart(4, '0')}`;

describe('ingest database commands', () => {
  let tmp: string;
  let db: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-db-'));
    db = path.join(tmp, 'db');
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /**
   * A database whose keys live in L0 tables, an older table version shadowed by a newer one, a
   * deleted key and the WAL; returns the model of what a read must see and the sequence numbers
   * each flush ended at.
   */
  interface Built {
    model: Map<string, string>;
    firstFlushSeq: number;
    secondFlushSeq: number;
    /** The largest key the second table holds. */
    secondFlushLargest: string;
    lastSequence: number;
  }

  async function buildDatabase(): Promise<Built> {
    const model = new Map<string, string>();
    let firstFlushSeq = 0;
    let secondFlushSeq = 0;
    let secondFlushLargest = '';
    const engine = await Engine.open(db, { writeBufferSizeBytes: 64 * 1024 });
    try {
      for (let i = 0; i < 300; i++) {
        await engine.put(Buffer.from(key(i)), Buffer.from(`v${i}`));
        model.set(key(i), `v${i}`);
      }
      await engine.flush();
      firstFlushSeq = engine.lastSequence;
      for (let i = 0; i < 300; i += 7) {
        await engine.put(Buffer.from(key(i)), Buffer.from(`w${i}`));
        model.set(key(i), `w${i}`);
        if (key(i) > secondFlushLargest) secondFlushLargest = key(i);
      }
      for (let i = 3; i < 300; i += 11) {
        await engine.delete(Buffer.from(key(i)));
        model.delete(key(i));
        if (key(i) > secondFlushLargest) secondFlushLargest = key(i);
      }
      await engine.flush();
      secondFlushSeq = engine.lastSequence;
      // Left in the WAL: recovered into the memtable when the CLI opens the database.
      await engine.put(Buffer.from(key(500)), Buffer.from('in-wal'));
      model.set(key(500), 'in-wal');
      await engine.delete(Buffer.from(key(1)));
      model.delete(key(1));
      return { model, firstFlushSeq, secondFlushSeq, secondFlushLargest, lastSequence: engine.lastSequence };
    } finally {
      await engine.close();
    }
  }

  function sortedEntries(model: Map<string, string>): Array<[string, string]> {
    return [...model.entries()].sort((a, b) => Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])));
  }

  it('put, get and delete text keys, with exit code 1 and found:false for a missing key', async () => {
    expect((await run('put', '--db', db, 'alpha', 'one')).code).toBe(0);
    const put2 = await run('put', '--db', db, 'beta', 'two', '--json');
    expect(put2.code).toBe(0);
    expect(JSON.parse(put2.stdout)).toEqual({ sequence: 2 });

    const g = await run('get', '--db', db, 'alpha');
    expect(g).toMatchObject({ code: 0, stdout: 'one\n' });
    expect(JSON.parse((await run('get', '--db', db, 'beta', '--json')).stdout)).toEqual({ key: 'beta', found: true, value: 'two' });

    const del = await run('delete', '--db', db, 'alpha', '--json');
    expect(del.code).toBe(0);
    expect(JSON.parse(del.stdout)).toEqual({ sequence: 3 });
    const missing = await run('get', '--db', db, 'alpha');
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('not found: alpha');
    const missingJson = await run('get', '--db', db, 'alpha', '--json');
    expect(missingJson.code).toBe(1);
    expect(JSON.parse(missingJson.stdout)).toEqual({ key: 'alpha', found: false });
  });

  it('scans in key order with --from (inclusive), --to (exclusive), --limit and --reverse over tables, WAL and deletions', async () => {
    const { model } = await buildDatabase();
    const all = sortedEntries(model);
    const scan = async (...extra: string[]): Promise<Array<[string, string]>> => {
      const r = await run('scan', '--db', db, '--json', ...extra);
      expect(r.code).toBe(0);
      return jsonLines(r.stdout).map((o) => [o.key as string, o.value as string]);
    };
    expect(await scan()).toEqual(all);
    const inRange = all.filter(([k]) => k >= key(10) && k < key(40));
    expect(await scan('--from', key(10), '--to', key(40))).toEqual(inRange);
    expect(await scan('--from', key(10), '--to', key(40), '--limit', '5')).toEqual(inRange.slice(0, 5));
    expect(await scan('--from', key(10), '--to', key(40), '--reverse')).toEqual([...inRange].reverse());
    expect(await scan('--to', key(40), '--reverse', '--limit', '3')).toEqual(
      all
        .filter(([k]) => k < key(40))
        .reverse()
        .slice(0, 3),
    );
    expect(await scan('--from', key(290), '--reverse')).toEqual(all.filter(([k]) => k >= key(290)).reverse());
    expect(await scan('--from', key(100), '--to', key(100))).toEqual([]);
    expect(await scan('--limit', '0')).toEqual([]);

    const human = await run('scan', '--db', db, '--from', key(0), '--limit', '2');
    expect(human.stdout).toBe(`${all[0][0]} : ${all[0][1]}\n${all[1][0]} : ${all[1][1]}\n`);

    const backwards = await run('scan', '--db', db, '--from', key(50), '--to', key(10));
    expect(backwards.code).toBe(2);
    expect(backwards.stderr).toMatch(/--from k0050 is after --to k0010/);
  });

  it('--hex takes and prints keys and values in hex; text-mode JSON falls back to hex fields for non-UTF-8 bytes', async () => {
    expect((await run('put', '--db', db, '--hex', '00ff10', '0x8081')).code).toBe(0);
    expect((await run('put', '--db', db, '--hex', '0x61', '6869')).code).toBe(0);
    const scan = await run('scan', '--db', db, '--hex', '--json');
    expect(jsonLines(scan.stdout)).toEqual([
      { keyHex: '00ff10', valueHex: '8081' },
      { keyHex: '61', valueHex: '6869' },
    ]);
    const get = await run('get', '--db', db, '--hex', '00FF10');
    expect(get).toMatchObject({ code: 0, stdout: '0x8081\n' });
    // Without --hex: "a" => "hi" is text; the binary pair keeps every byte as hex fields.
    expect(jsonLines((await run('scan', '--db', db, '--json')).stdout)).toEqual([
      { keyHex: '00ff10', valueHex: '8081' },
      { key: 'a', value: 'hi' },
    ]);
    expect((await run('scan', '--db', db)).stdout).toBe('0x00ff10 : 0x8081\na : hi\n');

    for (const bad of ['abc', 'zz', '0x0g']) {
      const r = await run('get', '--db', db, '--hex', bad);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`key "${bad}" is not hex`);
    }
    expect((await run('put', '--db', db, '--hex', '61', 'xyz')).code).toBe(2);
  });

  it('--key SPEC types keys through the import key codec: integers in numeric order, tuples as text or JSON arrays', async () => {
    for (const [k, v] of [
      ['10', 'ten'],
      ['-5', 'minus five'],
      ['7', 'seven'],
    ]) {
      // `--` ends the options so a negative key is not taken for one.
      expect((await run('put', '--db', db, '--key', 'id:int64', '--', k, v)).code).toBe(0);
    }
    const scan = await run('scan', '--db', db, '--key', 'id:int64', '--json');
    expect(jsonLines(scan.stdout)).toEqual([
      { key: '-5', value: 'minus five' },
      { key: '7', value: 'seven' },
      { key: '10', value: 'ten' },
    ]);
    // The stored bytes are the codec's: sign bit flipped, big-endian.
    expect(jsonLines((await run('scan', '--db', db, '--hex', '--json', '--limit', '1')).stdout)).toEqual([
      { keyHex: '7ffffffffffffffb', valueHex: Buffer.from('minus five').toString('hex') },
    ]);
    expect(jsonLines((await run('scan', '--db', db, '--key', 'id:int64', '--json', '--from', '0', '--to', '10')).stdout)).toEqual([
      { key: '7', value: 'seven' },
    ]);
    expect(JSON.parse((await run('get', '--db', db, '--key', 'id:int64', '--json', '--', '-5')).stdout)).toEqual({
      key: '-5',
      found: true,
      value: 'minus five',
    });
    const bad = await run('get', '--db', db, '--key', 'id:int64', 'twelve');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('key "twelve"');

    const tuples = path.join(tmp, 'tuples');
    expect((await run('put', '--db', tuples, '--key', 'sym,ts:int64', 'abc,5', 'x')).code).toBe(0);
    expect((await run('put', '--db', tuples, '--key', 'sym,ts:int64', '["a,b",5]', 'y')).code).toBe(0);
    const tscan = await run('scan', '--db', tuples, '--key', 'sym,ts:int64', '--json');
    // "a,b" < "abc" bytewise (',' < 'b'); a component with a comma prints as a JSON array.
    expect(jsonLines(tscan.stdout)).toEqual([
      { key: '["a,b","5"]', value: 'y' },
      { key: 'abc,5', value: 'x' },
    ]);
    expect((await run('get', '--db', tuples, '--key', 'sym,ts:int64', '["a,b","5"]')).stdout).toBe('y\n');
  });

  it('stats --json lists every level with file numbers, sizes, key ranges and sequence numbers', async () => {
    const built = await buildDatabase();
    const r = await run('stats', '--db', db, '--json');
    expect(r.code).toBe(0);
    const stats = JSON.parse(r.stdout) as {
      lastSequence: number;
      levels: Array<{
        level: number;
        files: Array<{
          number: number;
          sizeBytes: number;
          smallestHex: string;
          largestHex: string;
          smallestSeq: number;
          largestSeq: number;
        }>;
      }>;
    };
    // Recovery replays the WAL's put and delete: the last sequence is the writer's.
    expect(stats.lastSequence).toBe(built.lastSequence);
    expect(built.lastSequence).toBe(built.secondFlushSeq + 2);
    expect(stats.levels.map((l) => l.level)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const l0 = stats.levels[0].files;
    expect(l0).toHaveLength(2);
    // Newest first: the second flush holds the overwrites and deletes.
    expect(l0[0]).toMatchObject({
      smallestHex: Buffer.from(key(0)).toString('hex'),
      largestHex: Buffer.from(built.secondFlushLargest).toString('hex'),
      smallestSeq: built.firstFlushSeq + 1,
      largestSeq: built.secondFlushSeq,
    });
    expect(l0[1]).toMatchObject({
      smallestHex: Buffer.from(key(0)).toString('hex'),
      largestHex: Buffer.from(key(299)).toString('hex'),
      smallestSeq: 1,
      largestSeq: built.firstFlushSeq,
    });
    for (const f of l0) {
      const file = path.join(db, `${String(f.number).padStart(6, '0')}.sst`);
      expect(fs.statSync(file).size).toBe(f.sizeBytes);
    }
    expect(stats.levels.slice(1).every((l) => l.files.length === 0)).toBe(true);

    const human = await run('stats', '--db', db);
    expect(human.stdout).toContain(`last sequence: ${built.lastSequence}`);
    expect(human.stdout).toMatch(/L0: 2 file\(s\)/);
    expect(human.stdout).toContain(`[${key(0)} .. ${key(299)}] seq 1..${built.firstFlushSeq}`);
  });

  it('--stats prints the perf context: inside get --json, on stderr for scan', async () => {
    await buildDatabase();
    const g = await run('get', '--db', db, key(2), '--json', '--stats');
    expect(g.code).toBe(0);
    const got = JSON.parse(g.stdout) as { value: string; perf: Record<string, number> };
    expect(got.value).toBe('v2');
    // k0002 is only in the older table: the newer one's Bloom filter is consulted, the older one's data block read.
    expect(got.perf.bloomChecks).toBeGreaterThanOrEqual(1);
    expect(got.perf.dataBlocksRead + got.perf.blockCacheHits).toBeGreaterThanOrEqual(1);

    const s = await run('scan', '--db', db, '--json', '--limit', '10', '--stats');
    expect(s.code).toBe(0);
    expect(jsonLines(s.stdout)).toHaveLength(10);
    const perf = (JSON.parse(s.stderr) as { perf: Record<string, number> }).perf;
    expect(perf.dataBlocksRead).toBeGreaterThanOrEqual(2); // the first block of each table
    expect(perf.keyComparisons).toBeGreaterThan(0);

    const plain = await run('get', '--db', db, key(2), '--stats');
    expect(plain.stdout).toBe('v2\n');
    expect(Object.keys((JSON.parse(plain.stderr) as { perf: object }).perf)).toContain('keyComparisons');
  });

  it('delete-range writes one tombstone over [from, to) that hides the covered keys, and rejects from > to', async () => {
    for (const k of ['a', 'b', 'c', 'd']) expect((await run('put', '--db', db, k, `v${k}`)).code).toBe(0);
    const r = await run('delete-range', '--db', db, 'b', 'd', '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ sequence: 5 });
    const engine = await Engine.open(db, { createIfMissing: false });
    try {
      expect(engine.rangeTombstones().map((t) => [t.start.toString(), t.end.toString(), t.seq])).toEqual([['b', 'd', 5]]);
    } finally {
      await engine.close();
    }
    expect(jsonLines((await run('scan', '--db', db, '--json')).stdout)).toEqual([
      { key: 'a', value: 'va' },
      { key: 'd', value: 'vd' },
    ]);
    expect((await run('get', '--db', db, 'c')).code).toBe(1);
    // Equal bounds delete nothing and write nothing.
    expect(JSON.parse((await run('delete-range', '--db', db, 'x', 'x', '--json')).stdout)).toEqual({ sequence: 5 });
    const bad = await run('delete-range', '--db', db, 'd', 'b');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('from d is after to b');
  });

  it('reports a locked database clearly with exit code 1', async () => {
    await run('put', '--db', db, 'a', '1');
    const holder = await Engine.open(db);
    try {
      for (const args of [['get', 'a'], ['put', 'b', '2'], ['scan'], ['stats']]) {
        const r = await run(args[0], '--db', db, ...args.slice(1));
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/error: database is locked: .*db \(held by pid \d+\)/);
      }
    } finally {
      await holder.close();
    }
    expect((await run('get', '--db', db, 'a')).code).toBe(0);
  });

  it('read commands refuse a missing database without creating one; usage errors exit 2', async () => {
    for (const cmd of [['get', 'a'], ['scan'], ['stats'], ['compact']]) {
      const r = await run(cmd[0], '--db', db, ...cmd.slice(1));
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`no database at ${db}`);
    }
    expect(fs.existsSync(db)).toBe(false);
    expect((await run('get', 'a')).code).toBe(2); // no --db
    expect((await run('put', '--db', db, 'onlykey')).code).toBe(2);
    expect((await run('scan', '--db', db, '--limit', 'many')).code).toBe(2);
    expect((await run('scan', '--db', db, '--limit', '-1')).code).toBe(2);
    expect((await run('get', '--db', db, 'a', '--key', 'id:float')).code).toBe(2);
  });

  it('compact moves the data down the levels and keeps every visible key; stats reports compaction counters', async () => {
    const { model } = await buildDatabase();
    const r = await run('compact', '--db', db, '--json');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { filesPerLevelBefore: number[]; filesPerLevelAfter: number[]; compaction: { count: number } };
    expect(report.filesPerLevelBefore).toEqual([2, 0, 0, 0, 0, 0, 0]);
    expect(report.filesPerLevelAfter[0]).toBe(0); // the WAL's data was flushed and everything compacted out of L0
    expect(report.filesPerLevelAfter.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(report.compaction.count).toBeGreaterThanOrEqual(1);
    const scan = await run('scan', '--db', db, '--json');
    expect(jsonLines(scan.stdout).map((o) => [o.key, o.value])).toEqual(sortedEntries(model));
    const stats = JSON.parse((await run('stats', '--db', db, '--json')).stdout) as {
      levels: Array<{ files: unknown[] }>;
      compaction: object;
    };
    expect(stats.levels.map((l) => l.files.length)).toEqual(report.filesPerLevelAfter);
    expect(stats.compaction).toEqual(expect.objectContaining({ count: expect.any(Number) }));

    // A bounded range is passed through: keys outside it stay readable too.
    expect((await run('compact', '--db', db, '--from', key(10), '--to', key(20))).stdout).toMatch(/^compacted: files per level \[/);
  });

  it('does not pile up one WAL per command: opening flushes once enough WALs are live', async () => {
    for (let i = 0; i < MAX_REPLAYED_LOGS_BEFORE_FLUSH + 4; i++) {
      expect((await run('put', '--db', db, key(i), `v${i}`)).code).toBe(0);
    }
    const logs = fs.readdirSync(db).filter((n) => n.endsWith('.log'));
    expect(logs.length).toBeLessThanOrEqual(MAX_REPLAYED_LOGS_BEFORE_FLUSH);
    const scan = await run('scan', '--db', db, '--json');
    expect(jsonLines(scan.stdout)).toHaveLength(MAX_REPLAYED_LOGS_BEFORE_FLUSH + 4);
  });
});
