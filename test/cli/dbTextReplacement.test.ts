/**
 * A key or value typed on the command line that holds U+FFFD is refused with a usage error
 * pointing to --hex (cli/commands/dbText.ts; issue 41): Node decodes argv as UTF-8 and hands us
 * U+FFFD for a byte such as 0xff, so `ingest put` would otherwise write EF BF BD instead of the
 * byte the user typed. In-process with the string Node makes of it, and once end to end with the
 * raw byte 0xff in the argv of a child process (through /bin/sh's printf, since spawn's arguments
 * are strings).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { runCli as run } from '../support/cli';
import { REPO_ROOT } from '../support/paths';
import { Engine } from '../../src/engine/engine';

let tmp: string;
let db: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-fffd-'));
  db = path.join(tmp, 'db');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const HINT = 'Use --hex and give it as hex digits (ff00 for the bytes ff 00; efbfbd for U+FFFD itself)';

test('put, delete, get and scan refuse a key or value holding U+FFFD (exit 2, pointing to --hex); nothing is written', async () => {
  const cases: Array<[string[], string]> = [
    [['put', '--db', db, 'a\ufffdb', 'v'], 'key "a\ufffdb" holds U+FFFD (at character 1)'],
    [['put', '--db', db, 'k', '\ufffd'], 'value "\ufffd" holds U+FFFD (at character 0)'],
    [['put', '--db', db, '--key', 'name', '\ufffd', 'v'], 'key "\ufffd" holds U+FFFD'],
    [['delete', '--db', db, '\ufffd'], 'key "\ufffd" holds U+FFFD'],
    [['get', '--db', db, '\ufffd'], 'key "\ufffd" holds U+FFFD'],
    [['scan', '--db', db, '--from', 'x\ufffd'], '--from "x\ufffd" holds U+FFFD'],
  ];
  for (const [args, message] of cases) {
    const r = await run(...args);
    expect({ args, code: r.code }).toEqual({ args, code: 2 });
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain(HINT);
  }
  expect(fs.existsSync(db)).toBe(false);
  // The way the message points to: the byte 0xff as hex lands as that byte.
  expect((await run('put', '--db', db, '--hex', 'ff00', '76')).code).toBe(0);
  const e = await Engine.open(db, { readOnly: true });
  try {
    expect(e.get(Buffer.from([0xff, 0x00]))?.toString()).toBe('v');
    expect(e.get(Buffer.from('\ufffd\u0000'))).toBeNull();
  } finally {
    await e.close();
  }
});

test('end to end: the raw byte 0xff in argv is refused, not written as U+FFFD', () => {
  const cli = `${JSON.stringify(process.execPath)} -r ${JSON.stringify(path.join(REPO_ROOT, 'test/support/swc-register.js'))} ${JSON.stringify(path.join(REPO_ROOT, 'cli/ingest.ts'))}`;
  const r = spawnSync('/bin/sh', ['-c', `${cli} put --db "$1" "$(printf 'k\\377')" v`, 'sh', db], { encoding: 'utf8' });
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 2, stderr: expect.stringContaining('key "k\ufffd" holds U+FFFD') });
  expect(fs.existsSync(db)).toBe(false);
});
