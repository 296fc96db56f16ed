/**
 * The log's bound (src/server/serverLog.ts): stderr's buffer holds at most BUFFER_MAX_BYTES, and
 * lines past it are dropped, not queued without limit; every dropped line is counted (GET
 * /metrics' ingest_log_lines_dropped_total), so the lines written plus the lines counted are
 * exactly the lines logged.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const REPO_ROOT = path.resolve(__dirname, '../..');
/** 200k request lines of about 170 bytes: 34 MB, twice the buffer, written without a pause. */
const LINES = 200_000;

test('a flood of log lines faster than stderr takes them is bounded, and every dropped line is counted', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-flood-'));
  try {
    const stderrPath = path.join(dir, 'stderr.log');
    const stderr = fs.openSync(stderrPath, 'w');
    const r = spawnSync(
      process.execPath,
      ['-r', path.join(REPO_ROOT, 'test/support/swc-register.js'), path.join(REPO_ROOT, 'test/support/logFloodChild.ts'), String(LINES)],
      { stdio: ['ignore', 'pipe', stderr], encoding: 'utf8', timeout: 60_000 },
    );
    fs.closeSync(stderr);
    expect(r.status).toBe(0);
    const { dropped } = JSON.parse(r.stdout.trim()) as { dropped: number };
    // Request lines only: the child's closing "stopped" line comes after the count it printed,
    // and is written or dropped depending on how far stderr has drained by then.
    const written = fs
      .readFileSync(stderrPath, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"msg":"request"'));
    for (const line of written.slice(0, 3)) expect(JSON.parse(line)).toMatchObject({ msg: 'request', route: '/v1/kv/{key}' });
    // The loop never yields, so the 16 MiB buffer fills and the rest is dropped, counted.
    expect(dropped).toBeGreaterThan(0);
    expect(written.length + dropped).toBe(LINES);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
