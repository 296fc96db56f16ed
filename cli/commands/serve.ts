/**
 * `ingest serve --db DIR [--host 127.0.0.1] [--port 7420] [--token-file F] [--sync] [limits]`:
 * the engine as an HTTP service (src/server/server.ts; the API in docs/serve.md).
 *
 * Contract for scripts:
 * - once it listens, one JSON line on stdout: {"url", "pid", "db"}; a script waits for it;
 * - logs go to stderr: one JSON line per request, import event, start-up and shutdown
 *   (src/server/serverLog.ts; human-readable on a terminal), at --log-level and above;
 * - SIGTERM or SIGINT drains: no new requests, in-flight ones finish (at most --drain-timeout),
 *   the WAL is synced, the LOCK released; then exit 0. A second signal exits at once (1).
 * - binding a non-loopback --host needs --token-file (exit 2 otherwise); the token file's first
 *   line is the token clients send as `Authorization: Bearer <token>`.
 * Exit codes: 0 after a drain; 2 usage; 1 a locked database, a port in use, anything else.
 */
import { Command } from 'commander';
import type { IngestServer } from '../../src/server/server';
import { DEFAULT_HOST, DEFAULT_LIMITS, DEFAULT_PORT, ServerLimits } from '../../src/server/limits';
import { onFirstUse } from '../../src/util/onFirstUse';
import { readTokenFile } from '../../src/server/auth';
import { IngestError } from '../../src/util/errors';
import { parseByteSize } from './importOptions';
import { packageVersion } from '../version';

interface ServeCliOptions {
  db: string;
  host: string;
  port: string;
  tokenFile?: string;
  sync?: boolean;
  maxConcurrentImports?: string;
  maxQueuedImports?: string;
  maxConnections?: string;
  maxValueSize?: string;
  maxImportSize?: string;
  maxImportThreads?: string;
  maxImportMemory?: string;
  memoryBudget?: string;
  requestTimeout?: string;
  drainTimeout?: string;
  maxStagedSize?: string;
  stagedMaxAge?: string;
  metricsPublic?: boolean;
  logLevel: string;
}

function integerOption(text: string | undefined, name: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new IngestError('USAGE', `${name} must be an integer ${min}..${max}, got "${text}"`);
  return n;
}

function limitsOf(o: ServeCliOptions): Partial<ServerLimits> {
  const out: Partial<ServerLimits> = {};
  const set = <K extends keyof ServerLimits>(key: K, value: ServerLimits[K] | undefined): void => {
    if (value !== undefined) out[key] = value;
  };
  set('maxConcurrentImports', integerOption(o.maxConcurrentImports, '--max-concurrent-imports', 1, 64));
  set('maxQueuedImports', integerOption(o.maxQueuedImports, '--max-queued-imports', 0, 1024));
  set('maxConnections', integerOption(o.maxConnections, '--max-connections', 1, 65536));
  set('maxValueBytes', o.maxValueSize === undefined ? undefined : parseByteSize(o.maxValueSize, '--max-value-size'));
  set('maxImportBodyBytes', o.maxImportSize === undefined ? undefined : parseByteSize(o.maxImportSize, '--max-import-size'));
  set('maxImportThreads', integerOption(o.maxImportThreads, '--max-import-threads', 1, 64));
  set('maxImportMemoryBytes', o.maxImportMemory === undefined ? undefined : parseByteSize(o.maxImportMemory, '--max-import-memory'));
  set('memoryBudgetBytes', o.memoryBudget === undefined ? undefined : parseByteSize(o.memoryBudget, '--memory-budget'));
  set('requestTimeoutMs', integerOption(o.requestTimeout, '--request-timeout', 1, 3600_000));
  set('drainTimeoutMs', integerOption(o.drainTimeout, '--drain-timeout', 0, 3600_000));
  set('maxStagedBytes', o.maxStagedSize === undefined ? undefined : parseByteSize(o.maxStagedSize, '--max-staged-size'));
  set('stagedMaxAgeMs', integerOption(o.stagedMaxAge, '--staged-max-age', 1, 365 * 24 * 3600_000));
  return out;
}

/** Resolves once the server has drained after SIGTERM or SIGINT. */
function untilSignalled(server: IngestServer): Promise<void> {
  return new Promise((resolve, reject) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.once('SIGTERM', () => process.exit(1));
      process.once('SIGINT', () => process.exit(1));
      // The log's "draining" line names the signal; its "stopped" line ends the log.
      server.close(signal).then(resolve, reject);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
}

/** The server's modules (fastify among them) load only for `ingest serve`, not for every command. */
const serverModule = onFirstUse(() => require('../../src/server/server') as typeof import('../../src/server/server'));
const logModule = onFirstUse(() => require('../../src/server/serverLog') as typeof import('../../src/server/serverLog'));

async function serveCommand(o: ServeCliOptions): Promise<void> {
  const port = integerOption(o.port, '--port', 0, 65535) ?? DEFAULT_PORT;
  const logLevel = logModule().parseLogLevel(o.logLevel);
  if (logLevel === null)
    throw new IngestError('USAGE', `--log-level must be one of ${logModule().LOG_LEVELS.join(', ')}, got "${o.logLevel}"`);
  const server = await serverModule().IngestServer.start({
    dbDir: o.db,
    host: o.host,
    port,
    token: o.tokenFile === undefined ? undefined : readTokenFile(o.tokenFile),
    sync: o.sync === true,
    limits: limitsOf(o),
    metricsPublic: o.metricsPublic === true,
    logLevel,
    version: packageVersion(),
  });
  process.stdout.write(`${JSON.stringify({ url: server.url, pid: process.pid, db: o.db })}\n`);
  await untilSignalled(server);
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('serve the database over HTTP: reads, writes, scans and imports (docs/serve.md)')
    .requiredOption('--db <dir>', 'the database (created when missing)')
    .option('--host <host>', 'address to bind (not loopback: needs --token-file)', DEFAULT_HOST)
    .option('--port <n>', 'port (0: any free port)', String(DEFAULT_PORT))
    .option('--token-file <file>', 'clients must send the token on its first line as Authorization: Bearer <token>')
    .option('--sync', 'fdatasync the WAL before acknowledging each write')
    .option('--max-concurrent-imports <n>', `imports run at once (default ${DEFAULT_LIMITS.maxConcurrentImports})`)
    .option('--max-queued-imports <n>', `imports waiting their turn before 429 (default ${DEFAULT_LIMITS.maxQueuedImports})`)
    .option('--max-connections <n>', `open connections (default ${DEFAULT_LIMITS.maxConnections})`)
    .option('--max-value-size <size>', `largest value (default ${DEFAULT_LIMITS.maxValueBytes >> 20}MiB)`)
    .option(
      '--max-import-size <size>',
      `largest CSV body of an import, decoded (default ${DEFAULT_LIMITS.maxImportBodyBytes / 2 ** 30}GiB)`,
    )
    .option(
      '--max-import-threads <n>',
      `most parse or merge threads an import request may ask for (default ${DEFAULT_LIMITS.maxImportThreads}: the cores)`,
    )
    .option(
      '--max-import-memory <size>',
      `largest --memory-limit an import request may ask for (default ${DEFAULT_LIMITS.maxImportMemoryBytes >> 20}MiB)`,
    )
    .option(
      '--memory-budget <size>',
      `memory every request together may hold; past it, 503 (default ${DEFAULT_LIMITS.memoryBudgetBytes >> 20}MiB here: a quarter of the memory)`,
    )
    .option('--request-timeout <ms>', `time limit of a request that is not an import (default ${DEFAULT_LIMITS.requestTimeoutMs})`)
    .option('--drain-timeout <ms>', `how long SIGTERM waits for in-flight requests (default ${DEFAULT_LIMITS.drainTimeoutMs})`)
    .option(
      '--max-staged-size <size>',
      `bytes all staged imports together may hold; a PUT past it is 507 (default ${DEFAULT_LIMITS.maxStagedBytes / 2 ** 30}GiB)`,
    )
    .option('--staged-max-age <ms>', `a staged import untouched this long is removed (default ${DEFAULT_LIMITS.stagedMaxAgeMs}: 3 days)`)
    .option(
      '--log-level <level>',
      'the lowest level logged on stderr: fatal, error, warn, info (every request), debug, trace, silent',
      'info',
    )
    .option('--metrics-public', 'serve GET /metrics without the token (for a Prometheus scraper on a trusted network)')
    .action((o: ServeCliOptions) => serveCommand(o));
}
