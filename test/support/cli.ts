/**
 * Runs the `ingest` CLI in-process, as a script would see it: the exit code `main()` returns
 * (typed errors mapped by exitCodeFor) and everything written to stdout and stderr.
 */
import { main } from '../../cli/ingest';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(...args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  const err = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
  try {
    process.exitCode = undefined;
    const code = await main(['node', 'ingest', ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
    process.exitCode = undefined;
  }
}
