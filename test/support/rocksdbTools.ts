/**
 * RocksDB's own command-line tools (`sst_dump`, `ldb`, Debian package rocksdb-tools 7.8) as test
 * oracles for interoperability.
 *
 * Contract:
 * - `rocksdbTools` is non-null only when both tools are on PATH. Suites that need them register
 *   through `describeIfRocksdb`, which turns into `describe.skip` (with the reason in the suite
 *   name and a console warning) when they are absent, so a skipped run says why; with
 *   SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1 (`.ci/run` sets it) the suite fails instead, so CI never
 *   passes without the interoperability tests.
 * - Every helper runs one process with `spawnSync`, captures stdout/stderr as text and throws
 *   `RocksdbToolError` (command line + output) when the tool fails. Tools that report failure only
 *   in their output are parsed: `sst_dump --command=verify` exits 0 even when a block is corrupt,
 *   so `sstDumpVerify` looks for "Corruption" / "corrupted" in what it printed and requires its
 *   "The file is ok". Without `--verify_checksum`, 7.8's verify (and scan) do NOT check data
 *   block checksums at all and call a corrupt file ok, so every sst_dump read here passes it.
 * - Keys and values cross the process boundary as hex only (`--output_hex`, `--hex`), so binary
 *   keys with 0x00 / 0xFF bytes and empty keys survive.
 *
 * Output formats parsed (RocksDB 7.8.3):
 *   sst_dump --command=verify              "The file is ok", or "<file> is corrupted: ..." (exit 0)
 *   sst_dump --command=scan --output_hex   `'KEYHEX' seq:N, type:T => VALUEHEX`  (one per entry)
 *   sst_dump --show_properties             `  # entries: N`, `  filter policy name: bloomfilter`, ...
 *   sst_dump --command=raw                 writes `<file stem>_dump.txt`; its "Range deletions:"
 *                                          section lists `HEX    STARTHEX: ENDHEX`
 *   ldb scan --hex                         `0xKEY : 0xVALUE`                    (visible keys)
 *   ldb query --hex (stdin `get 0xKEY`)    `0xKEY ==> 0xVALUE`; stops at the first miss
 *   ldb get --hex 0xKEY                    `0xVALUE`, exit 1 and "NotFound" for a missing key
 *   ldb list_file_range_deletes            `start: HEX end: HEX seq: N`
 *   ldb write_extern_sst (stdin)           `0xKEY ==> 0xVALUE` lines in ascending key order
 *   ldb checkconsistency                   `OK` (exit 0), else the error (exit 1)
 *   ldb manifest_dump --verbose            `AddFile: LEVEL NUMBER SIZE ...` per added file
 * `dbBench` runs db_bench (same package), when on PATH (`dbBenchPath`); suites that need it check.
 * Databases are driven with `--compression_type=lz4` (LdbDatabase's `extraArgs`) until the reader
 * reads Snappy, RocksDB's default (issue 17, part 1).
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

export interface RocksdbTools {
  sstDump: string;
  ldb: string;
}

export const ROCKSDB_TOOLS_SKIP_REASON = 'skipped: rocksdb-tools not installed (apt-get install rocksdb-tools)';

/** Largest tool output we accept (a 100k-entry scan prints a few MB). */
const MAX_TOOL_OUTPUT_BYTES = 512 * 1024 * 1024;
/** A single tool run that takes longer than this is treated as hung. */
const TOOL_TIMEOUT_MS = 60_000;

/** The executable `name` in a directory of PATH, or null (the tests' tools: RocksDB's, chromium). */
export function findOnPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return null;
}

function detect(): RocksdbTools | null {
  const sstDump = findOnPath('sst_dump');
  const ldb = findOnPath('ldb');
  return sstDump !== null && ldb !== null ? { sstDump, ldb } : null;
}

export const rocksdbTools: RocksdbTools | null = detect();
/** db_bench from the same rocksdb-tools package, or null. */
export const dbBenchPath: string | null = findOnPath('db_bench');

/**
 * `test` when db_bench is on PATH; otherwise `test.skip` with the reason in the name, or, with
 * SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1, a test that fails saying db_bench is missing.
 */
export function testWithDbBench(name: string, body: () => Promise<void>, timeoutMs?: number): void {
  if (dbBenchPath !== null) {
    test(name, body, timeoutMs);
  } else if (process.env.SST_INGEST_REQUIRE_ROCKSDB_TOOLS === '1') {
    test(name, () => {
      throw new Error(`${name}: db_bench is not on PATH, and SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1 requires it`);
    });
  } else {
    test.skip(`${name} [skipped: db_bench not on PATH]`, body);
  }
}

/** Runs db_bench with `args` (`--db=...` included by the caller); throws on failure. */
export function dbBench(args: readonly string[]): ToolRun {
  if (dbBenchPath === null) throw new Error('db_bench is not on PATH (apt-get install rocksdb-tools)');
  return runOrThrow(dbBenchPath, args);
}

/**
 * `describe` when the tools are installed, else `describe.skip` with the reason in the suite
 * name (so it shows up in Jest's output) and a warning on the console.
 */
export function describeIfRocksdb(name: string, body: () => void): void {
  if (rocksdbTools !== null) {
    describe(name, body);
    return;
  }
  if (process.env.SST_INGEST_REQUIRE_ROCKSDB_TOOLS === '1') {
    describe(name, () => {
      test('needs sst_dump and ldb on PATH (SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1)', () => {
        throw new Error(
          `${name}: sst_dump and ldb are not on PATH, and SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1 requires them (apt-get install rocksdb-tools)`,
        );
      });
    });
    return;
  }
  console.warn(`${name}: ${ROCKSDB_TOOLS_SKIP_REASON}`);
  describe.skip(`${name} [${ROCKSDB_TOOLS_SKIP_REASON}]`, body);
}

function tools(): RocksdbTools {
  if (rocksdbTools === null) throw new Error(ROCKSDB_TOOLS_SKIP_REASON);
  return rocksdbTools;
}

export class RocksdbToolError extends Error {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  constructor(commandLine: string, status: number | null, stdout: string, stderr: string) {
    super(`${commandLine} exited with ${status}\nstdout: ${stdout.slice(0, 2000)}\nstderr: ${stderr.slice(0, 2000)}`);
    this.name = 'RocksdbToolError';
    this.status = status;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

export interface ToolRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `binary args` once; never throws for a non-zero exit (callers decide). */
export function runTool(binary: string, args: readonly string[], stdin?: string): ToolRun {
  const r = spawnSync(binary, args, {
    input: stdin,
    encoding: 'utf8',
    maxBuffer: MAX_TOOL_OUTPUT_BYTES,
    timeout: TOOL_TIMEOUT_MS,
  });
  if (r.error !== undefined) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function runOrThrow(binary: string, args: readonly string[], stdin?: string): ToolRun {
  const r = runTool(binary, args, stdin);
  if (r.status !== 0) throw new RocksdbToolError(`${binary} ${args.join(' ')}`, r.status, r.stdout, r.stderr);
  return r;
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function fromHex(hex: string): Buffer {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Error(`not hex: "${hex.slice(0, 80)}"`);
  return Buffer.from(hex, 'hex');
}

// ---------------------------------------------------------------------------- sst_dump

export interface VerifyResult {
  ok: boolean;
  output: string;
}

const CORRUPTION_MARKERS = /corruption|corrupted/i;

/**
 * `sst_dump --command=verify --verify_checksum`: ok only if it exits 0, says "The file is ok"
 * and prints no corruption report.
 */
export function sstDumpVerify(file: string): VerifyResult {
  const r = runTool(tools().sstDump, [`--file=${file}`, '--command=verify', '--verify_checksum']);
  const output = r.stdout + r.stderr;
  return { ok: r.status === 0 && /The file is ok/.test(r.stdout) && !CORRUPTION_MARKERS.test(output), output };
}

export interface DumpedEntry {
  userKey: Buffer;
  seq: number;
  type: number;
  value: Buffer;
}

const SCAN_LINE = /^'([0-9A-Fa-f]*)' seq:(\d+), type:(\d+) => ([0-9A-Fa-f]*)$/;

/**
 * `sst_dump --command=scan --output_hex --verify_checksum`: every point entry in file order, as
 * RocksDB reads it.
 */
export function sstDumpScan(file: string): DumpedEntry[] {
  const r = runOrThrow(tools().sstDump, [`--file=${file}`, '--command=scan', '--output_hex', '--verify_checksum']);
  if (CORRUPTION_MARKERS.test(r.stderr)) throw new RocksdbToolError(`sst_dump scan ${file}`, r.status, r.stdout, r.stderr);
  const entries: DumpedEntry[] = [];
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith("'")) continue;
    const m = SCAN_LINE.exec(line);
    if (m === null) throw new Error(`unparsable sst_dump scan line: ${line.slice(0, 200)}`);
    entries.push({ userKey: fromHex(m[1]), seq: Number(m[2]), type: Number(m[3]), value: fromHex(m[4]) });
  }
  return entries;
}

/**
 * Table properties as RocksDB reports them (`sst_dump --show_properties --command=none`), keyed by
 * sst_dump's labels ("# entries", "# range deletions", "filter policy name", ...).
 */
export function sstDumpProperties(file: string): Map<string, string> {
  const r = runOrThrow(tools().sstDump, [`--file=${file}`, '--show_properties', '--command=none']);
  const props = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const m = /^ {2}([^:]+): ?(.*)$/.exec(line);
    if (m !== null) props.set(m[1], m[2]);
  }
  return props;
}

export interface DumpedTombstone {
  start: Buffer;
  end: Buffer;
}

/**
 * Range tombstones as RocksDB decodes them, from `sst_dump --command=raw` (scan does not print
 * them). raw writes its report next to the file; it is read and removed here.
 */
export function sstDumpRangeTombstones(file: string): DumpedTombstone[] {
  runOrThrow(tools().sstDump, [`--file=${file}`, '--command=raw']);
  const report = file.replace(/\.sst$/, '') + '_dump.txt';
  const text = fs.readFileSync(report, 'utf8');
  fs.rmSync(report);
  const out: DumpedTombstone[] = [];
  const section = text.indexOf('\nRange deletions:\n');
  if (section < 0) return out;
  for (const line of text
    .slice(section + 1)
    .split('\n')
    .slice(2)) {
    if (line !== '' && !line.startsWith('  ')) break; // the next section ("Data Block # 1 @ ...")
    const m = /^ {2}HEX {4}([0-9A-F]*): ([0-9A-F]*)$/.exec(line);
    if (m !== null) out.push({ start: fromHex(m[1]), end: fromHex(m[2]) });
  }
  return out;
}

// ---------------------------------------------------------------------------- ldb

export interface ExternSstOptions {
  /** ldb's --compression_type; 'default' passes none (ldb's default options: Snappy). */
  compression: 'no' | 'lz4' | 'snappy' | 'zstd' | 'zlib' | 'bzip2' | 'default';
  bloomBits: number;
  /** --compression_max_dict_bytes: a dictionary meta block (zstd, zlib) when > 0. */
  maxDictBytes?: number;
}

/**
 * Writes an SST with RocksDB's SstFileWriter through `ldb write_extern_sst` (7.8 defaults:
 * format_version 5, XXH3). `entries` must be in strictly ascending key order. ldb needs a DB
 * directory to take options from; a scratch one is made under `scratchDir`.
 */
export function ldbWriteExternSst(
  output: string,
  entries: ReadonlyArray<readonly [Uint8Array, Uint8Array]>,
  opts: ExternSstOptions,
  scratchDir: string,
): void {
  const db = fs.mkdtempSync(path.join(scratchDir, 'ldb-writer-'));
  const stdin = entries.map(([k, v]) => `0x${toHex(k)} ==> 0x${toHex(v)}\n`).join('');
  runOrThrow(
    tools().ldb,
    [
      `--db=${db}`,
      '--create_if_missing',
      '--hex',
      ...(opts.compression === 'default' ? [] : [`--compression_type=${opts.compression}`]),
      ...(opts.maxDictBytes === undefined ? [] : [`--compression_max_dict_bytes=${opts.maxDictBytes}`]),
      `--bloom_bits=${opts.bloomBits}`,
      'write_extern_sst',
      output,
    ],
    stdin,
  );
  fs.rmSync(db, { recursive: true, force: true });
}

/** A scratch RocksDB database driven through `ldb`, one process per call. */
export class LdbDatabase {
  readonly dir: string;
  /** Options every command gets, e.g. `--compression_type=lz4`. */
  readonly extraArgs: readonly string[];

  constructor(dir: string, extraArgs: readonly string[] = []) {
    this.dir = dir;
    this.extraArgs = extraArgs;
  }

  private run(args: readonly string[], stdin?: string): ToolRun {
    return runOrThrow(tools().ldb, [`--db=${this.dir}`, ...this.extraArgs, ...args], stdin);
  }

  /** Runs any ldb command on this database (no --hex added); throws on failure. */
  command(args: readonly string[], stdin?: string): ToolRun {
    return this.run(args, stdin);
  }

  delete(key: Uint8Array): void {
    this.run(['--hex', 'delete', `0x${toHex(key)}`]);
  }

  deleteRange(start: Uint8Array, end: Uint8Array): void {
    this.run(['--hex', 'deleterange', `0x${toHex(start)}`, `0x${toHex(end)}`]);
  }

  /** One write batch of puts (`ldb batchput`). */
  batchPut(entries: ReadonlyArray<readonly [Uint8Array, Uint8Array]>, opts: { createIfMissing?: boolean } = {}): void {
    const kv = entries.flatMap(([k, v]) => [`0x${toHex(k)}`, `0x${toHex(v)}`]);
    this.run([...(opts.createIfMissing === true ? ['--create_if_missing'] : []), '--hex', 'batchput', ...kv]);
  }

  /** `ldb compact` of the whole key space. */
  compact(): void {
    this.run(['compact']);
  }

  /** `ldb checkconsistency`: throws unless RocksDB says OK. */
  checkConsistency(): void {
    const r = this.run(['checkconsistency']);
    if (!/^OK$/m.test(r.stdout)) throw new RocksdbToolError('ldb checkconsistency', r.status, r.stdout, r.stderr);
  }

  /** Files the live manifest lists (`ldb manifest_dump`): level and file number of each. */
  manifestFiles(): Array<{ level: number; fileNumber: number }> {
    const out: Array<{ level: number; fileNumber: number }> = [];
    let level = -1;
    for (const line of this.run(['manifest_dump']).stdout.split('\n')) {
      const lv = /^--- level (\d+) ---/.exec(line);
      if (lv !== null) level = Number(lv[1]);
      const f = /^ (\d+):\d+\[/.exec(line);
      if (f !== null) out.push({ level, fileNumber: Number(f[1]) });
    }
    return out;
  }

  /** Creates the database by writing one key (ldb has no bare "create"). */
  static create(dir: string, firstKey: Uint8Array, firstValue: Uint8Array): LdbDatabase {
    const db = new LdbDatabase(dir);
    db.run(['--create_if_missing', '--hex', 'put', `0x${toHex(firstKey)}`, `0x${toHex(firstValue)}`]);
    return db;
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.run(['--hex', 'put', `0x${toHex(key)}`, `0x${toHex(value)}`]);
  }

  /**
   * `ingest_extern_sst` (RocksDB checks the file's block checksums before accepting it);
   * `createIfMissing` makes a fresh database out of the ingestion alone.
   */
  ingest(file: string, opts: { createIfMissing?: boolean } = {}): void {
    this.run([...(opts.createIfMissing === true ? ['--create_if_missing'] : []), 'ingest_extern_sst', file]);
  }

  /** Every visible key and value, in key order (`ldb scan --hex`). */
  scan(): Array<[Buffer, Buffer]> {
    const out: Array<[Buffer, Buffer]> = [];
    for (const line of this.run(['--hex', 'scan']).stdout.split('\n')) {
      if (line === '') continue;
      const m = /^0x([0-9A-F]*) : 0x([0-9A-F]*)$/.exec(line);
      if (m === null) throw new Error(`unparsable ldb scan line: ${line.slice(0, 200)}`);
      out.push([fromHex(m[1]), fromHex(m[2])]);
    }
    return out;
  }

  /**
   * Point lookups of keys that must all exist, in one process (`ldb query`). The lookups go
   * through DB::Get, so RocksDB consults the file's filter and index. Throws if any is missing.
   */
  getAll(keys: readonly Uint8Array[]): Buffer[] {
    const stdin = keys.map((k) => `get 0x${toHex(k)}\n`).join('');
    const r = runTool(tools().ldb, [`--db=${this.dir}`, '--hex', 'query'], stdin);
    const values: Buffer[] = [];
    for (const line of r.stdout.split('\n')) {
      const m = /^0x([0-9A-F]*) ==> 0x([0-9A-F]*)$/.exec(line);
      if (m !== null) values.push(fromHex(m[2]));
    }
    if (r.status !== 0 || values.length !== keys.length) {
      throw new RocksdbToolError(`ldb query (${keys.length} gets, ${values.length} found)`, r.status, r.stdout, r.stderr);
    }
    return values;
  }

  /** `ldb get`: the value, or null when RocksDB reports NotFound. */
  get(key: Uint8Array): Buffer | null {
    const r = runTool(tools().ldb, [`--db=${this.dir}`, '--hex', 'get', `0x${toHex(key)}`]);
    if (r.status !== 0) {
      if (/NotFound/.test(r.stdout + r.stderr)) return null;
      throw new RocksdbToolError(`ldb get 0x${toHex(key)}`, r.status, r.stdout, r.stderr);
    }
    const m = /^0x([0-9A-F]*)$/m.exec(r.stdout);
    if (m === null) throw new Error(`unparsable ldb get output: ${r.stdout.slice(0, 200)}`);
    return fromHex(m[1]);
  }

  /** Range tombstones of every live file, with the seqno RocksDB applies to them. */
  rangeDeletes(): Array<{ start: Buffer; end: Buffer; seq: number }> {
    const out: Array<{ start: Buffer; end: Buffer; seq: number }> = [];
    for (const line of this.run(['list_file_range_deletes']).stdout.split('\n')) {
      const m = /^start: ([0-9A-F]*) end: ([0-9A-F]*) seq: (\d+)$/.exec(line);
      if (m !== null) out.push({ start: fromHex(m[1]), end: fromHex(m[2]), seq: Number(m[3]) });
    }
    return out;
  }
}
