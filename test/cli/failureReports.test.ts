/**
 * Failures a script can read (cli/failure.ts): with --json one failure document on stdout
 * (unless the command printed its own result), with --progress json only NDJSON lines on stderr
 * ending with the error event, SIGTERM ending a run with the INTERRUPTED document and event and
 * exit 130.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { runCliChild } from '../support/cliChild';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'failure-reports-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Every stderr line parsed as JSON (a plain-text line fails the parse, and the test). */
function ndjson(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

function csv(name: string, rows: number, firstId = 0): string {
  const file = path.join(dir, name);
  const lines = ['id,name'];
  for (let i = 0; i < rows; i++) lines.push(`${firstId + ((i * 7919) % rows)},name-${i} with some padding text to make rows longer`);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

test('--json: a failure is one document on stdout, besides its line on stderr', async () => {
  const missing = path.join(dir, 'missing.csv');
  const r = await runCli('import', missing, '--db', path.join(dir, 'db'), '--json');
  expect(r.code).toBe(2);
  const doc = JSON.parse(r.stdout) as { error: { code: string; message: string; exitCode: number } };
  expect(doc).toEqual({ error: { code: 'BAD_INPUT', message: expect.stringContaining(missing), exitCode: 2 } });
  expect(r.stderr).toBe(`error: ${doc.error.message}\n`);
  // A usage error commander finds gets one too.
  const usage = await runCli('import', missing, '--frobnicate', '--json');
  expect(usage.code).toBe(2);
  expect(JSON.parse(usage.stdout)).toEqual({ error: { code: 'USAGE', message: "unknown option '--frobnicate'", exitCode: 2 } });
});

test('--json: a run that printed its result (conflicts, exit 3) prints no second document', async () => {
  const db = path.join(dir, 'db');
  const first = csv('a.csv', 100);
  expect((await runCli('import', first, '--header', '--key', 'id:int64', '--db', db, '--json')).code).toBe(0);
  const changed = path.join(dir, 'b.csv');
  fs.writeFileSync(changed, fs.readFileSync(first, 'utf8').replace('name-0 with', 'changed with'));
  const r = await runCli('import', changed, '--header', '--key', 'id:int64', '--db', db, '--json');
  expect(r.code).toBe(3);
  const docs = r.stdout.trim().split('\n');
  expect(docs).toHaveLength(1);
  expect((JSON.parse(docs[0]) as { check: { conflicts: number } }).check.conflicts).toBe(1);
});

test('--progress json: stderr holds only NDJSON, ending with the error event, for any failure', async () => {
  const missing = path.join(dir, 'missing.csv');
  const bad = await runCli('import', missing, '--db', path.join(dir, 'db'), '--progress', 'json');
  expect(bad.code).toBe(2);
  const events = ndjson(bad.stderr);
  expect(events[events.length - 1]).toMatchObject({ event: 'error', code: 'BAD_INPUT', exitCode: 2 });
  const usage = await runCli('import', missing, '--progress=json', '--frobnicate');
  expect(usage.code).toBe(2);
  expect(ndjson(usage.stderr)).toEqual([expect.objectContaining({ event: 'error', code: 'USAGE', exitCode: 2 })]);
  // A failure inside the run: one final event, the command's own.
  const dup = path.join(dir, 'dup.csv');
  fs.writeFileSync(dup, 'id,v\n1,a\n1,b\n');
  const run = await runCli('import', dup, '--header', '--db', path.join(dir, 'db2'), '--progress', 'json', '--json');
  expect(run.code).toBe(2);
  const finals = ndjson(run.stderr).filter((e) => e.event !== 'progress');
  expect(finals).toEqual([expect.objectContaining({ event: 'error', code: 'DUPLICATE_KEY', exitCode: 2 })]);
  expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: 'DUPLICATE_KEY', exitCode: 2 } });
});

test('SIGTERM: the final error event and the failure document say INTERRUPTED, exit 130', async () => {
  const input = csv('big.csv', 40_000);
  const db = path.join(dir, 'db');
  const args = ['import', input, '--header', '--key', 'id:int64', '--db', db, '--target-file-size', '64KiB', '--memory-limit', '8MiB'];
  const stopped = await runCliChild([...args, '--json', '--progress', 'json', '--step-checkpoints-from', '0'], {
    SST_INGEST_CRASH_AT: 'sst.finished:3:SIGTERM',
  });
  expect(stopped.code).toBe(130);
  const events = ndjson(stopped.stderr);
  const last = events[events.length - 1];
  expect(last).toMatchObject({ event: 'error', code: 'INTERRUPTED', exitCode: 130 });
  expect(String(last.message)).toContain('interrupted: the import is kept');
  expect(JSON.parse(stopped.stdout)).toMatchObject({ error: { code: 'INTERRUPTED', exitCode: 130 } });
  // Without the script flags: the line a person reads.
  const plain = await runCliChild([...args, '--no-resume'], { SST_INGEST_CRASH_AT: 'sst.finished:3:SIGTERM' });
  expect(plain.code).toBe(130);
  expect(plain.stderr).toContain('error: interrupted: the import is kept');
}, 60_000);
