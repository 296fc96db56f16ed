/**
 * Runs a TypeScript child process (through swc-register.js) and SIGKILLs it at a chosen moment,
 * for the crash tests. The child's protocol on stdout: a line `open` once it has opened its
 * database, then one number per line for each step it has made durable (acknowledged).
 *
 * Resolves with the acknowledged numbers, lines still in the pipe when it died included (they
 * were written before the kill); rejects if the child exits any other way than by the SIGKILL.
 */
import * as path from 'path';
import { spawn } from 'child_process';

/**
 * Runs `root`/`script` with `args`, and SIGKILLs it `killAfterMs` after it printed `open`
 * (`afterOpen`) or after it was spawned (to kill it during startup).
 */
export function runTsChildAndKill(
  root: string,
  script: string,
  args: readonly string[],
  killAfterMs: number,
  afterOpen: boolean,
): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--require', path.join(root, 'test/support/swc-register.js'), path.join(root, script), ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const acked: number[] = [];
    let pending = '';
    let stderr = '';
    let timer: NodeJS.Timeout | null = null;
    const arm = (): void => {
      if (timer === null) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    };
    if (!afterOpen) arm();
    const take = (line: string): void => {
      if (line === 'open') arm();
      else if (line !== '') acked.push(Number(line));
    };
    child.stdout.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() as string;
      lines.forEach(take);
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      pending.split('\n').forEach(take);
      if (signal !== 'SIGKILL') reject(new Error(`${script} exited with ${code}: ${stderr}`));
      else resolve(acked);
    });
  });
}
