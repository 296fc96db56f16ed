/**
 * `ingest put | get | delete | delete-range | scan | stats | compact --db DIR`: the engine as a
 * command-line key-value store, for scripts, debugging and spot checks (RocksDB's `ldb` plays
 * this role for RocksDB). Documented in docs/engine-cli.md.
 *
 * Every command opens the database at --db (taking its LOCK: a database another process or
 * engine holds open fails with "database is locked: DIR (held by pid N)", exit 1), does one thing
 * and closes it. Writes are durable when the command returns: close() syncs the WAL. `put`,
 * `delete` and `delete-range` create the database if it is missing; the other commands refuse a
 * directory that holds none (exit 2), so a mistyped --db never leaves an empty database behind.
 * A read-write open starts a new WAL and MANIFEST; once MAX_REPLAYED_LOGS_BEFORE_FLUSH WALs have
 * piled up, opening flushes them into one L0 table.
 * `get`, `scan` and `stats` open the database read-only (EngineOptions.readOnly: no LOCK, nothing
 * written) when its directory takes no writes (a read-only mount, EROFS; no write permission,
 * EACCES), and with `--read-only` (as `ldb --readonly`); otherwise read-write as above, so that a
 * database a server holds is reported as locked, naming the server. Writes to a directory that
 * takes none fail with a message saying so (exit 1), not a stack trace.
 *
 * Keys and values on the command line and in the output: see dbText.ts (`--hex`, `--key SPEC`).
 *
 * `--server URL [--token-file F]` instead of --db (docs/serve.md, "The CLI as a client"): the
 * command runs through the server's API (cli/serverClient.ts), keys and values in hex on the
 * wire and formatted here by the same DbTextCodec, so output and exit codes are those of --db
 * (a server's error comes back with its code; an unreachable server exits 1 naming the URL).
 * put/delete --json print the `ingest-sequence` the server acknowledged; delete-range is a
 * one-operation POST /v1/batch; scan reads pages, following each page's continuation (each page its own
 * snapshot); stats prints the server's document without its "server" part. Not with --server:
 * `--stats` (the perf context is this process's) and `compact` (the server has no route for it:
 * it compacts in the background); both are usage errors, exit 2.
 *
 * Exit codes: 0 success; 1 `get` of a missing key (like ldb), a locked database, corruption, I/O
 * errors, `compact` when the engine has no compaction; 2 usage: bad options, bad hex, a key the
 * spec cannot encode, --from after --to, no database at --db.
 *
 * `--json` output (stable field names):
 * - get:    {"key"|"keyHex", "found": true, "value"|"valueHex"} or {"key"|"keyHex", "found": false}
 * - put, delete, delete-range: {"sequence": N} (the database's last sequence number after the write)
 * - scan:   one object per line, {"key"|"keyHex", "value"|"valueHex"}
 * - stats:  {"lastSequence", "levels": [{"level", "files": [{"number", "sizeBytes", "smallestHex",
 *            "largestHex", "smallestSeq", "largestSeq"}]}] (all levels, L0 newest file first),
 *            "compaction": {...} when the engine counts compactions,
 *            "spaceAmplification": {"estimate", "tableBytes", "lastLevel", "lastLevelBytes"}}
 * - compact: {"filesPerLevelBefore": [...], "filesPerLevelAfter": [...]} (+ "compaction")
 * `--stats` on get and scan prints the perf context of the read (see src/base/perfContext.ts):
 * inside the object as "perf" for `get --json`, else as one line {"perf": {...}} on stderr.
 * `--as-columns` on get and scan splits each value into its columns by the encoding the
 * database records (DIR/VALUE-ENCODING, src/ingest/valueEncodingFile.ts; split by
 * src/ingest/rows/valueColumns.ts): `name=value` lines (scan: under a `KEY :` line), or with
 * --json the fields "columns" (or "columnsHex") and "lossy" instead of "value" (dbText.ts). A
 * database that records none is a usage error (exit 2), and so is --as-columns with --server.
 * Raw values are split at every delimiter: a note on stderr says that this is lossy.
 */
import * as fs from 'fs';
import { Command } from 'commander';
import { Engine } from '../../src/engine/engine';
import { statsReportOf } from '../../src/engine/statsReport';
import { currentFileName } from '../../src/engine/fileNames';
import { resetPerfContext, snapshotPerfContext, PerfContext } from '../../src/base/perfContext';
import { IngestError } from '../../src/util/errors';
import { nonNegativeInteger } from '../../src/ingest/options/optionText';
import { DbTextCodec, KeyFields } from './dbText';
import { TargetOptions, dbDirOf, withServer } from './serverTarget';
import type { ServerClient } from '../serverClient';
import { StatsReport } from '../../src/engine/statsReport';
import { VALUE_ENCODING_FILE_NAME, readValueEncoding } from '../../src/ingest/valueEncodingFile';
import { ValueEncoding } from '../../src/ingest/rows/valueEncoding';
import { splitValue } from '../../src/ingest/rows/valueColumns';

interface CommonOptions extends TargetOptions {
  hex?: boolean;
  key?: string;
  json?: boolean;
}

/** `--read-only` of get, scan and stats. */
interface ReadOnlyOption {
  readOnly?: boolean;
}

interface ReadCommandOptions extends CommonOptions, ReadOnlyOption {
  stats?: boolean;
  asColumns?: boolean;
}

interface ScanOptions extends ReadCommandOptions {
  from?: string;
  to?: string;
  limit?: number;
  reverse?: boolean;
}

interface CompactOptions extends CommonOptions {
  from?: string;
  to?: string;
}

/** The engine's compaction entry point, present once the engine has compaction. */
interface CompactableEngine {
  compactRange(from?: Buffer, to?: Buffer): Promise<unknown>;
}

/** Output flushed to stdout in chunks of about this many characters (a scan prints many lines). */
const OUTPUT_CHUNK_CHARS = 64 * 1024;
/** Recovered WALs at which opening flushes them into one table (see openDb). */
export const MAX_REPLAYED_LOGS_BEFORE_FLUSH = 16;

// --- opening --------------------------------------------------------------------------------------

function codecFor(o: CommonOptions): DbTextCodec {
  return DbTextCodec.forOptions(o);
}

async function openDb(dir: string, createIfMissing: boolean, readOnly = false): Promise<Engine> {
  // Checked here rather than left to the engine so the message speaks the CLI's language.
  if (!createIfMissing && !fs.existsSync(currentFileName(dir))) {
    throw new IngestError('USAGE', `no database at ${dir} (put creates one)`);
  }
  const engine = await Engine.open(dir, { createIfMissing, readOnly });
  // Each open starts a new WAL and, while the recovered data is small, keeps the old ones live.
  // One command per open would leave one more WAL per command; flushing once enough have piled
  // up retires them into one table file.
  if (!readOnly && engine.recovery.logsReplayed.length >= MAX_REPLAYED_LOGS_BEFORE_FLUSH) {
    try {
      await engine.flush();
    } catch (err) {
      await engine.close();
      throw err;
    }
  }
  return engine;
}

/** Whether `dir` refuses writes: a read-only mount (EROFS) or no write permission (EACCES, EPERM). */
function refusesWrites(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return false;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'EROFS' || code === 'EACCES' || code === 'EPERM';
  }
}

/** The database of a read command (get, scan, stats): read-only with --read-only or when `dir` refuses writes. */
function withReadDb<T>(dir: string, o: ReadOnlyOption, body: (engine: Engine) => Promise<T> | T): Promise<T> {
  return withDb(dir, false, body, o.readOnly === true || refusesWrites(dir));
}

/** Opens the database, runs `body`, and closes it whatever happens. */
async function withDb<T>(dir: string, createIfMissing: boolean, body: (engine: Engine) => Promise<T> | T, readOnly = false): Promise<T> {
  const engine = await openDb(dir, createIfMissing, readOnly);
  try {
    return await body(engine);
  } finally {
    await engine.close();
  }
}

// --- output ---------------------------------------------------------------------------------------

/**
 * Lines to stdout in chunks, waiting when the pipe is full so a large scan into a slow reader
 * holds one chunk of memory, not the whole output. A reader that goes away (`| head`) ends the
 * output quietly: `closed` turns true and callers stop producing.
 */
class StdoutLines {
  private pending: string[] = [];
  private pendingChars = 0;

  get closed(): boolean {
    return stdoutClosed;
  }

  /** Queues a line; true when a chunk is full and the caller should `await flush()`. */
  add(text: string): boolean {
    this.pending.push(text, '\n');
    this.pendingChars += text.length + 1;
    return this.pendingChars >= OUTPUT_CHUNK_CHARS;
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0 || stdoutClosed) return;
    const chunk = this.pending.join('');
    this.pending = [];
    this.pendingChars = 0;
    if (!process.stdout.write(chunk)) await stdoutWritable();
  }
}

/** Resolves when stdout drains, closes or fails (the EPIPE handler records a closed reader). */
function stdoutWritable(): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      process.stdout.off('drain', done);
      process.stdout.off('close', done);
      process.stdout.off('error', done);
      resolve();
    };
    process.stdout.on('drain', done);
    process.stdout.on('close', done);
    process.stdout.on('error', done);
  });
}

let stdoutClosed = false;
let epipeHandlerInstalled = false;

/** A reader closing our stdout (EPIPE) is the normal end of `scan | head`, not an error. */
function ignoreEpipeOnStdout(): void {
  if (epipeHandlerInstalled) return;
  epipeHandlerInstalled = true;
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') {
      stdoutClosed = true;
      return;
    }
    throw err;
  });
}

function printJson(obj: object): void {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

function printPerfToStderr(perf: PerfContext): void {
  process.stderr.write(`${JSON.stringify({ perf })}\n`);
}

// --- commands -------------------------------------------------------------------------------------

/** The perf context is this process's: a read on a server's has none to print. */
function refuseStatsWithServer(o: ReadCommandOptions): void {
  if (o.stats === true) throw new IngestError('USAGE', "--stats prints this process's perf context; it does not go with --server");
  refuseReadOnlyWithServer(o);
}

/** --read-only is how --db is opened; a server has its database open already. */
function refuseReadOnlyWithServer(o: ReadOnlyOption): void {
  if (o.readOnly === true) throw new IngestError('USAGE', '--read-only opens --db read-only; it does not go with --server');
}

/**
 * --as-columns: the encoding the database at `dir` records, or null without the option (or with
 * no database there, which the open then refuses by name). No record, or --server, is USAGE.
 */
function columnsEncodingOf(o: ReadCommandOptions, dir: string | null): ValueEncoding | null {
  if (o.asColumns !== true) return null;
  if (dir === null)
    throw new IngestError('USAGE', `--as-columns reads the database's ${VALUE_ENCODING_FILE_NAME} record; it does not go with --server`);
  if (!fs.existsSync(currentFileName(dir))) return null;
  const encoding = readValueEncoding(dir);
  if (encoding === null) {
    throw new IngestError(
      'USAGE',
      `--as-columns: the database at ${dir} records no value encoding (no ${VALUE_ENCODING_FILE_NAME}; it is written by the first import into the database since value encodings are recorded)`,
    );
  }
  if (encoding.format === 'raw')
    process.stderr.write('note: raw values are split at every delimiter: a field that held the delimiter reads as two (lossy)\n');
  return encoding;
}

/** GET /v1/stats without its "server" part: the document `stats --json` prints with --db. */
async function remoteStatsReport(client: ServerClient): Promise<StatsReport> {
  const document = await client.stats();
  delete document.server;
  return document as unknown as StatsReport;
}

async function putCommand(keyText: string, valueText: string, o: CommonOptions): Promise<void> {
  const codec = codecFor(o);
  const key = codec.parseKey(keyText, 'key');
  const value = codec.parseValue(valueText);
  const dir = dbDirOf(o, 'put');
  const sequence =
    dir === null
      ? await withServer(o, (client) => client.write('PUT', key, value))
      : await withDb(dir, true, async (engine) => {
          await engine.put(key, value);
          return engine.lastSequence;
        });
  if (o.json) printJson({ sequence });
  else process.stdout.write('OK\n');
}

async function deleteCommand(keyText: string, o: CommonOptions): Promise<void> {
  const key = codecFor(o).parseKey(keyText, 'key');
  const dir = dbDirOf(o, 'delete');
  const sequence =
    dir === null
      ? await withServer(o, (client) => client.write('DELETE', key))
      : await withDb(dir, true, async (engine) => {
          await engine.delete(key);
          return engine.lastSequence;
        });
  if (o.json) printJson({ sequence });
  else process.stdout.write('OK\n');
}

async function deleteRangeCommand(fromText: string, toText: string, o: CommonOptions): Promise<void> {
  const codec = codecFor(o);
  const from = codec.parseKey(fromText, 'from');
  const to = codec.parseKey(toText, 'to');
  // [from, to) with from == to is empty and writes nothing, as in RocksDB; from > to is a mistake.
  if (Buffer.compare(from, to) > 0)
    throw new IngestError('USAGE', `delete-range: from ${codec.displayKey(from)} is after to ${codec.displayKey(to)}`);
  const dir = dbDirOf(o, 'delete-range');
  const sequence =
    dir === null
      ? await withServer(o, (client) => client.batch([{ op: 'deleteRange', start: from.toString('hex'), end: to.toString('hex') }]))
      : await withDb(dir, true, async (engine) => {
          await engine.deleteRange(from, to);
          return engine.lastSequence;
        });
  if (o.json) printJson({ sequence });
  else process.stdout.write('OK\n');
}

async function getCommand(keyText: string, o: ReadCommandOptions): Promise<void> {
  const codec = codecFor(o);
  const key = codec.parseKey(keyText, 'key');
  const dir = dbDirOf(o, 'get');
  if (dir === null) refuseStatsWithServer(o);
  const encoding = columnsEncodingOf(o, dir);
  const { value, perf } =
    dir === null
      ? { value: await withServer(o, (client) => client.get(key)), perf: snapshotPerfContext() }
      : await withReadDb(dir, o, (engine) => {
          resetPerfContext();
          const v = engine.get(key);
          return { value: v, perf: snapshotPerfContext() };
        });
  const keyFields: KeyFields = codec.keyFields(key);
  if (o.json) {
    const shown =
      value === null ? {} : encoding === null ? codec.valueFields(value) : codec.columnFields(value, splitValue(value, encoding));
    const found = { found: value !== null, ...shown };
    printJson(o.stats ? { ...keyFields, ...found, perf } : { ...keyFields, ...found });
  } else {
    if (value !== null && encoding !== null) process.stdout.write(`${codec.columnLines(value, splitValue(value, encoding)).join('\n')}\n`);
    else if (value !== null) process.stdout.write(`${codec.displayValue(value)}\n`);
    else process.stderr.write(`not found: ${codec.displayKey(key)}\n`);
    if (o.stats) printPerfToStderr(perf);
  }
  // A missing key is an answer, not a failure, but scripts want to branch on it (ldb also exits 1).
  if (value === null) process.exitCode = 1;
}

async function scanCommand(o: ScanOptions): Promise<void> {
  const codec = codecFor(o);
  const from = o.from === undefined ? undefined : codec.parseKey(o.from, '--from');
  const to = o.to === undefined ? undefined : codec.parseKey(o.to, '--to');
  if (from !== undefined && to !== undefined && Buffer.compare(from, to) > 0) {
    throw new IngestError('USAGE', `scan: --from ${codec.displayKey(from)} is after --to ${codec.displayKey(to)}`);
  }
  const limit = o.limit ?? Number.POSITIVE_INFINITY;
  ignoreEpipeOnStdout();
  const out = new StdoutLines();
  const dir = dbDirOf(o, 'scan');
  const encoding = columnsEncodingOf(o, dir);
  const line = (key: Buffer, value: Buffer): string => scanLine(codec, o.json === true, encoding, key, value);
  if (dir === null) {
    refuseStatsWithServer(o);
    await withServer(o, (client) => remoteScan(client, { from, to, limit, reverse: o.reverse === true }, out, line));
    await out.flush();
    return;
  }
  const perf = await withReadDb(dir, o, async (engine) => {
    resetPerfContext();
    const it = engine.newIterator({ lowerBound: from, upperBound: to });
    try {
      // Positioning at a bound explicitly (rather than first()/last() under bounds) states the intent.
      if (o.reverse) {
        if (to !== undefined) it.seekLT(to);
        else it.last();
      } else if (from !== undefined) {
        it.seekGE(from);
      } else {
        it.first();
      }
      for (let n = 0; n < limit && it.valid() && !out.closed; n++) {
        if (out.add(line(it.key(), it.value()))) await out.flush();
        if (o.reverse) it.prev();
        else it.next();
      }
    } finally {
      it.close();
    }
    await out.flush();
    return snapshotPerfContext();
  });
  if (o.stats) printPerfToStderr(perf);
}

/** One entry of a scan's output (one line, or with columns in text a `KEY :` line and a line per column). */
function scanLine(codec: DbTextCodec, json: boolean, encoding: ValueEncoding | null, key: Buffer, value: Buffer): string {
  if (json) {
    const shown = encoding === null ? codec.valueFields(value) : codec.columnFields(value, splitValue(value, encoding));
    return JSON.stringify({ ...codec.keyFields(key), ...shown });
  }
  if (encoding === null) return `${codec.displayKey(key)} : ${codec.displayValue(value)}`;
  return [`${codec.displayKey(key)} :`, ...codec.columnLines(value, splitValue(value, encoding)).map((l) => `  ${l}`)].join('\n');
}

/** The most entries a remote scan with its own --limit asks for per request: each page is its own request (and snapshot). */
export const REMOTE_SCAN_PAGE_ENTRIES = 100_000;

interface ScanRange {
  from: Buffer | undefined;
  to: Buffer | undefined;
  limit: number;
  reverse: boolean;
}

/**
 * A scan through the server, in pages: each page's last line, when the page's limit cut the
 * range, says where the next one starts (GET /v1/scan's {"next"}), and the scan follows it until
 * the range is done or --limit entries are printed. Without --limit a page is the server's default
 * size (ServerLimits.defaultScanLimit); with it, what is left of it, at most
 * REMOTE_SCAN_PAGE_ENTRIES. Pages are separate reads, so a scan longer than a page is not one
 * snapshot (docs/serve.md says so).
 */
async function remoteScan(client: ServerClient, r: ScanRange, out: StdoutLines, line: (k: Buffer, v: Buffer) => string): Promise<void> {
  let from = r.from;
  let to = r.to;
  let left = r.limit;
  while (left > 0 && !out.closed) {
    const query = new URLSearchParams({ reverse: r.reverse ? '1' : '0' });
    if (Number.isFinite(left)) query.set('limit', String(Math.min(left, REMOTE_SCAN_PAGE_ENTRIES)));
    if (from !== undefined) query.set('from', from.toString('hex'));
    if (to !== undefined) query.set('to', to.toString('hex'));
    let got = 0;
    const next = await client.scan(query, async (key, value) => {
      got++;
      if (out.add(line(key, value))) await out.flush();
      return !out.closed;
    });
    left -= got;
    // No continuation: the range is done (or the output closed). A page that sent nothing cannot move on.
    if (next === null || got === 0) return;
    if (next.from !== undefined) from = next.from;
    if (next.to !== undefined) to = next.to;
  }
}

async function statsCommand(o: CommonOptions & ReadOnlyOption): Promise<void> {
  const codec = codecFor(o);
  const dir = dbDirOf(o, 'stats');
  if (dir === null) refuseReadOnlyWithServer(o);
  const report = dir === null ? await withServer(o, remoteStatsReport) : await withReadDb(dir, o, (engine) => statsReportOf(engine));
  if (o.json) {
    printJson(report);
    return;
  }
  const lines = [`last sequence: ${report.lastSequence}`];
  for (const { level, files } of report.levels) {
    if (files.length === 0) continue;
    const bytes = files.reduce((sum, f) => sum + f.sizeBytes, 0);
    lines.push(`L${level}: ${files.length} file(s), ${bytes} bytes`);
    for (const f of files) {
      const smallest = codec.displayKey(Buffer.from(f.smallestHex, 'hex'));
      const largest = codec.displayKey(Buffer.from(f.largestHex, 'hex'));
      lines.push(`  #${f.number} ${f.sizeBytes} bytes [${smallest} .. ${largest}] seq ${f.smallestSeq}..${f.largestSeq}`);
    }
  }
  if (report.levels.every((l) => l.files.length === 0)) lines.push('no table files (everything is in the write-ahead log)');
  if ('compaction' in report) lines.push(`compaction: ${JSON.stringify(report.compaction)}`);
  const amp = report.spaceAmplification;
  if (amp !== undefined)
    lines.push(
      `space amplification: ${amp.estimate.toFixed(3)}x (${amp.tableBytes} table bytes, ${amp.lastLevelBytes} in L${amp.lastLevel}, the last level with data)`,
    );
  process.stdout.write(`${lines.join('\n')}\n`);
}

function hasCompactRange(engine: Engine): engine is Engine & CompactableEngine {
  return typeof (engine as Engine & Partial<CompactableEngine>).compactRange === 'function';
}

async function compactCommand(o: CompactOptions): Promise<void> {
  const codec = codecFor(o);
  const from = o.from === undefined ? undefined : codec.parseKey(o.from, '--from');
  const to = o.to === undefined ? undefined : codec.parseKey(o.to, '--to');
  const dir = dbDirOf(o, 'compact');
  if (dir === null) throw new IngestError('USAGE', 'compact: the server has no compaction route; the server compacts in the background');
  const report = await withDb(dir, false, async (engine) => {
    if (!hasCompactRange(engine)) {
      throw new IngestError('NOT_SUPPORTED', 'compaction is not available yet: this engine build has no compactRange');
    }
    const filesPerLevelBefore = engine.stats().filesPerLevel;
    await engine.compactRange(from, to);
    const stats = engine.stats();
    return { filesPerLevelBefore, filesPerLevelAfter: stats.filesPerLevel, compaction: stats.compaction };
  });
  if (o.json) printJson(report);
  else
    process.stdout.write(
      `compacted: files per level [${report.filesPerLevelBefore.join(', ')}] -> [${report.filesPerLevelAfter.join(', ')}]\n`,
    );
}

// --- registration ---------------------------------------------------------------------------------

/** The options every database command takes. */
function withCommonOptions(cmd: Command): Command {
  return cmd
    .option('--db <dir>', 'database directory')
    .option('--server <url>', 'run against the `ingest serve` at this URL instead of --db (docs/serve.md)')
    .option('--token-file <file>', "with --server: the server's token (its first line)")
    .option('--hex', 'keys and values are given and printed in hex (keys: unless --key is given)')
    .option('--key <spec>', 'keys are typed through this key spec, as in import: COL[:TYPE][,...], TYPE bytes|int64|uint64')
    .option('--json', 'machine-readable output (see docs/engine-cli.md)');
}

export function registerDbCommands(program: Command): void {
  withCommonOptions(program.command('put').description('write one key-value pair (creates the database if missing)'))
    .argument('<key>')
    .argument('<value>')
    .action((key: string, value: string, o: CommonOptions) => putCommand(key, value, o));
  withCommonOptions(program.command('get').description('print the value of a key; exit code 1 when the key is absent'))
    .argument('<key>')
    .option('--stats', 'print the perf context of the read')
    .option('--read-only', 'open the database read-only (no LOCK, nothing written; automatic on a read-only directory)')
    .option('--as-columns', "print the value split into its columns by the database's recorded value encoding (docs/engine-cli.md)")
    .action((key: string, o: ReadCommandOptions) => getCommand(key, o));
  withCommonOptions(program.command('delete').description('delete one key (creates the database if missing)'))
    .argument('<key>')
    .action((key: string, o: CommonOptions) => deleteCommand(key, o));
  withCommonOptions(program.command('delete-range').description('delete the keys in [from, to) (a range tombstone)'))
    .argument('<from>', 'first key deleted')
    .argument('<to>', 'first key kept (exclusive)')
    .action((from: string, to: string, o: CommonOptions) => deleteRangeCommand(from, to, o));
  withCommonOptions(program.command('scan').description('print key-value pairs in key order'))
    .option('--from <key>', 'first key (inclusive)')
    .option('--to <key>', 'end key (exclusive)')
    .option('--limit <n>', 'print at most n pairs', nonNegativeInteger('--limit'))
    .option('--reverse', 'descending key order (from the last key before --to)')
    .option('--stats', 'print the perf context of the scan on stderr')
    .option('--read-only', 'open the database read-only (no LOCK, nothing written; automatic on a read-only directory)')
    .option('--as-columns', "print each value split into its columns by the database's recorded value encoding (docs/engine-cli.md)")
    .action((o: ScanOptions) => scanCommand(o));
  withCommonOptions(program.command('stats').description('files per level and their key ranges'))
    .option('--read-only', 'open the database read-only (no LOCK, nothing written; automatic on a read-only directory)')
    .action((o: CommonOptions & ReadOnlyOption) => statsCommand(o));
  withCommonOptions(
    program
      .command('compact')
      .description('flush, then compact the keys [from, to] down the levels (default: everything); --db only: a server compacts by itself'),
  )
    .option('--from <key>', 'first key of the range (inclusive)')
    .option('--to <key>', 'last key of the range (inclusive)')
    .action((o: CompactOptions) => compactCommand(o));
}
