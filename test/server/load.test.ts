/**
 * Load through a real HTTP load generator (autocannon, npm) against an in-process server on
 * 127.0.0.1. GET and PUT /v1/kv at 16 connections for 2 s each: zero connection errors and
 * timeouts, every answer 200 (404 only for the keys never written), every 200 the key's value,
 * every PUT 204, and every acknowledged PUT's value readable afterwards. Then a mixed load:
 * autocannon writers and readers while two CSV imports land through POST /v1/imports, one with
 * on-conflict=abort, one with overwrite, with client writes racing into both imports' keys:
 * zero errors, zero lost acknowledged writes, and for each import every conflict a racing write
 * caused is in its report (a client write with sequence <= the report's snapshotSequence, the
 * key's live value at the snapshot, differs from the import's: the report lists that key with
 * that write's sequence and value, and nothing else), and afterwards each import key holds the
 * latest client write when it came after the snapshot, else the import's value (overwrite) or
 * its latest client write (abort: nothing of the import landed).
 */
import * as fs from 'fs';
import * as path from 'path';
import autocannon from 'autocannon';
import { IngestServer } from '../../src/server/server';
import { ReportedConflict } from '../../src/conflict/report';
import { mulberry32 } from '../../src/util/random';
import { csvOf, entriesAsMap, scanAll, send, tmpDir } from './helpers';

const SEED = 0x10ad;
let root: string;
beforeAll(() => {
  root = tmpDir('server-load-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

interface Cannon {
  instance: autocannon.Instance;
  done: Promise<autocannon.Result>;
}

function cannon(opts: autocannon.Options): Cannon {
  let instance: autocannon.Instance | null = null;
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(opts, (err: unknown, result: autocannon.Result) => (err ? reject(err) : resolve(result)));
  });
  if (instance === null) throw new Error('autocannon did not start');
  return { instance, done };
}

/** Per-connection state autocannon hands to setupRequest and onResponse. */
interface Ctx {
  key?: string;
  value?: string;
}

interface Write {
  key: string;
  value: string;
  seq: number;
}

function statusCounts(result: autocannon.Result): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [status, s] of Object.entries(result.statusCodeStats ?? {})) out[status] = s.count ?? 0;
  return out;
}

function expectClean(result: autocannon.Result, allowed: readonly string[]): void {
  expect({ errors: result.errors, timeouts: result.timeouts, mismatches: result.mismatches, resets: result.resets }).toEqual({
    errors: 0,
    timeouts: 0,
    mismatches: 0,
    resets: 0,
  });
  for (const status of Object.keys(statusCounts(result))) expect(allowed).toContain(status);
}

function sequenceHeader(headers: autocannon.Request['headers']): number {
  const raw = headers?.['ingest-sequence'];
  return Number(Array.isArray(raw) ? raw[0] : raw);
}

test('autocannon GET and PUT /v1/kv, 16 connections, 2 s each: no errors, every answer right, every acknowledged PUT readable', async () => {
  const server = await IngestServer.start({ dbDir: path.join(root, 'kv'), port: 0, log: () => undefined });
  try {
    const rand = mulberry32(SEED);
    const KEYS = 1000;
    const ops = Array.from({ length: KEYS }, (_, i) => ({ op: 'put', key: `g${i}`, value: `gv-${i}-${'y'.repeat(i % 50)}` }));
    expect((await send(server.url, { method: 'POST', path: '/v1/batch', body: JSON.stringify(ops) })).status).toBe(200);

    const wrongReads: string[] = [];
    const get = await cannon({
      url: server.url,
      connections: 16,
      duration: 2,
      requests: [
        {
          method: 'GET',
          setupRequest: (req, context) => {
            const i = Math.floor(rand() * KEYS * 1.2);
            (context as Ctx).key = String(i);
            return { ...req, path: `/v1/kv/g${i}` };
          },
          onResponse: (status, body, context) => {
            const i = Number((context as Ctx).key);
            const ok = i < KEYS ? status === 200 && body === ops[i].value : status === 404;
            if (!ok) wrongReads.push(`g${i}: ${status} ${body.slice(0, 100)}`);
          },
        },
      ],
    }).done;
    expectClean(get, ['200', '404']);
    expect(wrongReads).toEqual([]);
    expect(get['2xx']).toBeGreaterThan(100);
    expect(statusCounts(get)['404'] ?? 0).toBeGreaterThan(0);

    let n = 0;
    const acked: Write[] = [];
    const refused: string[] = [];
    const put = await cannon({
      url: server.url,
      connections: 16,
      duration: 2,
      requests: [
        {
          method: 'PUT',
          setupRequest: (req, context) => {
            const c = context as Ctx;
            c.key = `p${String(n).padStart(7, '0')}`;
            c.value = `pv-${n}-${'z'.repeat(n % 100)}`;
            n++;
            return { ...req, path: `/v1/kv/${c.key}`, body: c.value };
          },
          onResponse: (status, _body, context, headers) => {
            const c = context as Ctx;
            if (status === 204) acked.push({ key: c.key ?? '', value: c.value ?? '', seq: sequenceHeader(headers) });
            else refused.push(`${c.key}: ${status}`);
          },
        },
      ],
    }).done;
    expectClean(put, ['204']);
    expect(refused).toEqual([]);
    expect(acked.length).toBe(put['2xx']);
    expect(acked.length).toBeGreaterThan(100);
    expect(new Set(acked.map((w) => w.seq)).size).toBe(acked.length);
    const stored = entriesAsMap(await scanAll(server.url, { query: '&from=70&to=71' }));
    expect(stored.size).toBeGreaterThanOrEqual(acked.length);
    const lost = acked.filter((w) => stored.get(w.key) !== w.value);
    expect(lost).toEqual([]);
    process.stdout.write(
      `load: GET ${get.requests.average}/s avg (${get['2xx']} 2xx), PUT ${put.requests.average}/s avg (${acked.length} acknowledged)\n`,
    );
  } finally {
    await server.close();
  }
});

interface ImportReply {
  status: number;
  snapshotSequence: number;
  conflicts: ReportedConflict[];
  summaryConflicts: number;
}

test('mixed: autocannon readers and writers while two CSV imports land (abort and overwrite): every racing conflict reported, nothing lost', async () => {
  const server = await IngestServer.start({ dbDir: path.join(root, 'mixed'), port: 0, log: () => undefined });
  try {
    const rand = mulberry32(SEED + 1);
    const N = 4000;
    const importRows = (tag: string): Array<[string, string]> =>
      Array.from({ length: N }, (_, i): [string, string] => [`${tag}${String(i).padStart(5, '0')}`, `${tag}-import-${i}`]);
    const imports = { abort: importRows('ia'), overwrite: importRows('ib') };
    const keyFor = (): string => {
      const r = rand();
      if (r < 0.3) return imports.abort[Math.floor(rand() * N)][0];
      if (r < 0.6) return imports.overwrite[Math.floor(rand() * N)][0];
      return `o${Math.floor(rand() * 5000)}`;
    };

    let n = 0;
    const writes: Write[] = [];
    /** Every PUT built, value → key: the few still in flight when autocannon stops may land unanswered. */
    const issued = new Map<string, string>();
    const bad: string[] = [];
    const writers = cannon({
      url: server.url,
      connections: 8,
      duration: 60,
      requests: [
        {
          method: 'PUT',
          setupRequest: (req, context) => {
            const c = context as Ctx;
            c.key = keyFor();
            c.value = `client-${n++}`;
            issued.set(c.value, c.key);
            return { ...req, path: `/v1/kv/${c.key}`, body: c.value };
          },
          onResponse: (status, body, context, headers) => {
            const c = context as Ctx;
            if (status === 204) writes.push({ key: c.key ?? '', value: c.value ?? '', seq: sequenceHeader(headers) });
            else bad.push(`PUT ${c.key}: ${status} ${body.slice(0, 200)}`);
          },
        },
      ],
    });
    const readers = cannon({
      url: server.url,
      connections: 4,
      duration: 60,
      requests: [
        {
          method: 'GET',
          setupRequest: (req, context) => {
            (context as Ctx).key = keyFor();
            return { ...req, path: `/v1/kv/${(context as Ctx).key}` };
          },
          onResponse: (status, body, context) => {
            if (status !== 200 && status !== 404) bad.push(`GET ${(context as Ctx).key}: ${status} ${body.slice(0, 200)}`);
          },
        },
      ],
    });

    const runImport = async (policy: 'abort' | 'overwrite'): Promise<ImportReply> => {
      const r = await send(server.url, {
        method: 'POST',
        path: `/v1/imports?name=${policy}.csv&on-conflict=${policy}&max-reported=1000000`,
        body: csvOf(imports[policy]),
      });
      const doc = JSON.parse(r.body.toString()) as {
        conflictReport?: { snapshotSequence: number; conflicts: ReportedConflict[]; summary: { conflicts: number } };
      };
      if (doc.conflictReport === undefined) throw new Error(`import ${policy}: ${r.status} ${r.body.toString().slice(0, 300)}`);
      return {
        status: r.status,
        snapshotSequence: doc.conflictReport.snapshotSequence,
        conflicts: doc.conflictReport.conflicts,
        summaryConflicts: doc.conflictReport.summary.conflicts,
      };
    };
    await new Promise((r) => setTimeout(r, 400));
    const [aborted, overwritten] = await Promise.all([runImport('abort'), runImport('overwrite')]);
    await new Promise((r) => setTimeout(r, 400));
    writers.instance.stop();
    readers.instance.stop();
    const [w, r] = await Promise.all([writers.done, readers.done]);
    expectClean(w, ['204']);
    expectClean(r, ['200', '404']);
    expect(bad).toEqual([]);
    expect(writes.length).toBe(w['2xx']);

    expect(aborted.status).toBe(409);
    expect(overwritten.status).toBe(200);
    const byKey = new Map<string, Write[]>();
    for (const wr of writes) {
      const list = byKey.get(wr.key) ?? [];
      list.push(wr);
      byKey.set(wr.key, list);
    }
    const latest = (k: string, atMost = Infinity): Write | undefined =>
      (byKey.get(k) ?? [])
        .filter((x) => x.seq <= atMost)
        .reduce<Write | undefined>((a, b) => (a === undefined || b.seq > a.seq ? b : a), undefined);

    const finalState = entriesAsMap(await scanAll(server.url));
    const answered = new Set(writes.map((x) => x.value));
    const unanswered = new Map<string, Set<string>>();
    for (const [value, key] of issued) {
      if (!answered.has(value)) unanswered.set(key, (unanswered.get(key) ?? new Set()).add(value));
    }
    // A key's final value: the expected one, or a PUT cut off in flight by stop() (issued after every import ended).
    let cutOff = 0;
    const expectFinal = (k: string, want: string | undefined, why: string): void => {
      const got = finalState.get(k);
      if (got === want) return;
      if (got !== undefined && unanswered.get(k)?.has(got) === true) {
        cutOff++;
        return;
      }
      throw new Error(`key ${k}: ${got ?? 'absent'}, expected ${want ?? 'absent'} (${why})`);
    };
    const racing = { conflicts: 0, afterSnapshot: 0 };
    for (const [policy, reply] of [
      ['abort', aborted],
      ['overwrite', overwritten],
    ] as const) {
      const expected = new Map<string, Write>();
      for (const [k, v] of imports[policy]) {
        const live = latest(k, reply.snapshotSequence);
        if (live !== undefined && live.value !== v) expected.set(Buffer.from(k).toString('hex'), live);
      }
      const reported = reply.conflicts.map((c) => [c.keyHex, c.existingSeq, c.existingValue.data, c.newValue.data]);
      const importValue = new Map(imports[policy]);
      const want = [...expected]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([hex, live]) => [hex, live.seq, live.value, importValue.get(Buffer.from(hex, 'hex').toString())]);
      expect(reported).toEqual(want);
      expect(reply.summaryConflicts).toBe(expected.size);
      expect(expected.size).toBeGreaterThan(0);
      racing.conflicts += expected.size;

      for (const [k, v] of imports[policy]) {
        const last = latest(k);
        if (last !== undefined && last.seq > reply.snapshotSequence) racing.afterSnapshot++;
        const want1 = policy === 'overwrite' ? (last !== undefined && last.seq > reply.snapshotSequence ? last.value : v) : last?.value;
        expectFinal(k, want1, `${policy} import, snapshot ${reply.snapshotSequence}, last write ${JSON.stringify(last)}`);
      }
    }
    expect(racing.afterSnapshot).toBeGreaterThan(0);
    // Every acknowledged write outside the imports: its latest value is there.
    for (const [k] of byKey) {
      if (k.startsWith('ia') || k.startsWith('ib')) continue;
      expectFinal(k, latest(k)?.value, 'outside the imports');
    }
    expect(cutOff).toBeLessThanOrEqual(8);
    process.stdout.write(
      `mixed load: ${writes.length} writes, ${r['2xx'] + (statusCounts(r)['404'] ?? 0)} reads, ${racing.conflicts} racing conflicts reported, ${racing.afterSnapshot} import keys rewritten after the snapshot\n`,
    );
  } finally {
    await server.close();
  }
});
