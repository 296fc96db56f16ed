/**
 * Runs the `ingest` CLI in a child process (TypeScript through swc-register), for tests that
 * kill it: by a crash point (SST_INGEST_CRASH_AT, src/util/crashPoints.ts) or after a delay.
 * Resolves with the exit code or the signal, and everything it wrote.
 */
import * as path from 'path';
import { spawn } from 'child_process';
import { REPO_ROOT } from './paths';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runCliChild(
  args: string[],
  env: Record<string, string>,
  killAfterMs?: number,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-r', path.join(REPO_ROOT, 'test/support/swc-register.js'), path.join(REPO_ROOT, 'cli/ingest.ts'), ...args],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = killAfterMs !== undefined ? setTimeout(() => child.kill(signal), killAfterMs) : null;
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
