/**
 * RocksDB's side files of a database directory: OPTIONS-NNNNNN and IDENTITY.
 *
 * On disk:
 * - OPTIONS-NNNNNN: RocksDB's options file, an INI dialect: `[Version]`, `[DBOptions]`,
 *   `[CFOptions "name"]` and `[TableOptions/BlockBasedTable "name"]` sections of `  key=value`
 *   lines, `#` comments. RocksDB writes one (numbered from the file counter) at every open and
 *   keeps the newest; so does this engine, with the options it honours, so that RocksDB tools
 *   that load the file (`ldb --try_load_options`) open the database as it was used. Options not
 *   written take RocksDB's defaults.
 * - IDENTITY: the database's unique id, a UUID without newline, written once at creation (or at
 *   the first open of a database that has none, e.g. one made before issue 17).
 *
 * Contract:
 * - `optionsRefusals(dir, names)` reads the newest OPTIONS file, if any, and names every setting
 *   this engine cannot honour: a column family other than "default", a comparator other than
 *   bytewise, a merge operator, compaction styles other than leveled, table formats other than
 *   BlockBasedTable, blob files. A merge operator is refused only when `hasMergeOperands` says
 *   data holds merge operands: ldb configures one on every database it opens, and a database
 *   without operands reads exactly as without an operator. Read-only.
 * - `writeOptionsFile` and `ensureIdentity` write through a temp file, fsync, rename and a
 *   directory fsync (durableFs.ts), so a crash never leaves a torn file under the real name.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { IngestError } from '../util/errors';
import { FileKind, identityFileName, optionsFileName, parseFileName, tempFileName } from './fileNames';
import { replaceFileDurably } from './durableFs';
import { BYTEWISE_COMPARATOR_NAME } from './manifest';
import { FILTER_ARENA_DIVISOR } from './memtable/memtableFilter';

/** Section name -> (option name -> value). */
export type OptionsFile = Map<string, Map<string, string>>;

/** Parses an OPTIONS file's text; lines outside a section and malformed lines are skipped. */
export function parseOptionsFile(text: string): OptionsFile {
  const sections: OptionsFile = new Map();
  let current: Map<string, string> | null = null;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('[') && line.endsWith(']')) {
      current = new Map();
      sections.set(line.slice(1, -1), current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current !== null && eq > 0) current.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return sections;
}

/** The newest OPTIONS-NNNNNN among `names` (base names in `dir`), or null. */
export function newestOptionsFile(dir: string, names: readonly string[]): string | null {
  let best = -1;
  for (const name of names) {
    const parsed = parseFileName(name);
    if (parsed !== null && parsed.kind === FileKind.Options && parsed.number > best) best = parsed.number;
  }
  return best < 0 ? null : optionsFileName(dir, best);
}

/** What in `options` (one OPTIONS file) this engine cannot honour; empty when nothing. */
export function refusalsOf(options: OptionsFile, hasMergeOperands: () => boolean): string[] {
  const reasons: string[] = [];
  for (const section of options.keys()) {
    const m = /^CFOptions "(.*)"$/.exec(section);
    if (m !== null && m[1] !== 'default') reasons.push(`column family ${JSON.stringify(m[1])} (only "default" is supported)`);
  }
  const cf = options.get('CFOptions "default"') ?? new Map<string, string>();
  const comparator = cf.get('comparator');
  if (comparator !== undefined && comparator !== BYTEWISE_COMPARATOR_NAME) {
    const what = /\.u\d+ts$/.test(comparator) ? 'user-defined timestamps (comparator' : 'comparator';
    reasons.push(`${what} ${comparator}${what === 'comparator' ? '' : ')'}`);
  }
  const style = cf.get('compaction_style');
  if (style !== undefined && style !== 'kCompactionStyleLevel') {
    reasons.push(`compaction_style ${style} (only leveled compaction, kCompactionStyleLevel, is supported)`);
  }
  const table = cf.get('table_factory');
  if (table !== undefined && table !== 'BlockBasedTable') reasons.push(`table_factory ${table} (only BlockBasedTable is supported)`);
  if (cf.get('enable_blob_files') === 'true') reasons.push('blob files (enable_blob_files=true)');
  if (cf.get('persist_user_defined_timestamps') === 'false')
    reasons.push('user-defined timestamps (persist_user_defined_timestamps=false)');
  const merge = cf.get('merge_operator');
  if (merge !== undefined && merge !== 'nullptr' && merge !== '' && hasMergeOperands()) {
    reasons.push(`merge operator ${merge} with merge operands in the data (merges cannot be resolved)`);
  }
  return reasons;
}

/**
 * NOT_SUPPORTED when the newest OPTIONS file in `dir` names something this engine cannot honour
 * (see refusalsOf); nothing is written either way.
 */
export function refuseUnsupportedOptions(dir: string, names: readonly string[], hasMergeOperands: () => boolean): void {
  const file = newestOptionsFile(dir, names);
  if (file === null) return;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new IngestError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  const reasons = refusalsOf(parseOptionsFile(text), hasMergeOperands);
  if (reasons.length === 0) return;
  throw new IngestError(
    'NOT_SUPPORTED',
    `database ${dir} uses ${reasons.join('; ')} (${path.basename(file)}): not supported, nothing was changed`,
  );
}

/** The settings an OPTIONS file of ours records: the ones the engine was opened with. */
export interface OptionsSettings {
  writeBufferSizeBytes: number;
  maxImmutableMemtables: number;
  maxOpenFiles: number;
  numLevels: number;
  level0FileNumCompactionTrigger: number;
  level0SlowdownWritesTrigger: number;
  level0StopWritesTrigger: number;
  maxBytesForLevelBase: number;
  maxBytesForLevelMultiplier: number;
  targetFileSizeBytes: number;
  disableAutoCompactions: boolean;
  compactionPri: 'min-overlapping-ratio' | 'round-robin';
  /** RocksDB's CompressionType and ChecksumType numbers. */
  compression: number;
  checksumType: number;
  formatVersion: number;
  blockSizeBytes: number;
  blockRestartInterval: number;
  bloomBitsPerKey: number;
  /** A Bloom filter per memtable, 1/FILTER_ARENA_DIVISOR of its arena (src/engine/memtable/memtableFilter.ts). */
  memtableFilter: boolean;
}

const COMPRESSION_NAMES = [
  'kNoCompression',
  'kSnappyCompression',
  'kZlibCompression',
  'kBZip2Compression',
  'kLZ4Compression',
  'kLZ4HCCompression',
  'kXpressCompression',
  'kZSTD',
];
const CHECKSUM_NAMES = ['kNoChecksum', 'kCRC32c', 'kxxHash', 'kxxHash64', 'kXXH3'];

/** The text of an OPTIONS file recording `s` (RocksDB 7.8's layout; unlisted options default). */
export function formatOptionsFile(s: OptionsSettings): string {
  const section = (name: string, entries: Array<[string, string | number | boolean]>): string =>
    `[${name}]\n${entries.map(([k, v]) => `  ${k}=${String(v)}\n`).join('')}  \n`;
  return [
    '# This is a RocksDB option file.\n#\n# Written by sst-ingest: the options its engine honours.\n#\n\n',
    section('Version', [
      ['rocksdb_version', '7.8.3'],
      ['options_file_version', '1.1'],
    ]),
    '\n',
    section('DBOptions', [
      ['max_open_files', s.maxOpenFiles],
      ['wal_recovery_mode', 'kPointInTimeRecovery'],
      ['write_dbid_to_manifest', false],
    ]),
    '\n',
    section('CFOptions "default"', [
      ['comparator', BYTEWISE_COMPARATOR_NAME],
      ['merge_operator', 'nullptr'],
      ['compaction_style', 'kCompactionStyleLevel'],
      ['compaction_pri', s.compactionPri === 'round-robin' ? 'kRoundRobin' : 'kMinOverlappingRatio'],
      ['table_factory', 'BlockBasedTable'],
      ['compression', COMPRESSION_NAMES[s.compression] ?? 'kNoCompression'],
      ['num_levels', s.numLevels],
      ['write_buffer_size', s.writeBufferSizeBytes],
      ['max_write_buffer_number', s.maxImmutableMemtables + 1],
      ['level0_file_num_compaction_trigger', s.level0FileNumCompactionTrigger],
      ['level0_slowdown_writes_trigger', s.level0SlowdownWritesTrigger],
      ['level0_stop_writes_trigger', s.level0StopWritesTrigger],
      ['max_bytes_for_level_base', s.maxBytesForLevelBase],
      ['max_bytes_for_level_multiplier', s.maxBytesForLevelMultiplier.toFixed(6)],
      ['target_file_size_base', s.targetFileSizeBytes],
      ['disable_auto_compactions', s.disableAutoCompactions],
      ['memtable_whole_key_filtering', s.memtableFilter],
      ['memtable_prefix_bloom_size_ratio', (s.memtableFilter ? 1 / FILTER_ARENA_DIVISOR : 0).toFixed(6)],
      ['enable_blob_files', false],
    ]),
    section('TableOptions/BlockBasedTable "default"', [
      ['format_version', s.formatVersion],
      ['checksum', CHECKSUM_NAMES[s.checksumType] ?? 'kXXH3'],
      ['block_size', s.blockSizeBytes],
      ['block_restart_interval', s.blockRestartInterval],
      ['filter_policy', s.bloomBitsPerKey > 0 ? `bloomfilter:${s.bloomBitsPerKey}:false` : 'nullptr'],
      ['whole_key_filtering', true],
      ['index_type', 'kBinarySearch'],
    ]),
  ].join('');
}

/** Writes OPTIONS-`fileNumber` durably. */
export function writeOptionsFile(dir: string, fileNumber: number, s: OptionsSettings): void {
  replaceFileDurably(optionsFileName(dir, fileNumber), tempFileName(dir, fileNumber), Buffer.from(formatOptionsFile(s), 'utf8'), dir);
}

/** Writes IDENTITY (a fresh UUID) if the directory has none; returns the database id. */
export function ensureIdentity(dir: string): string {
  const file = identityFileName(dir);
  try {
    const id = fs.readFileSync(file, 'latin1').trim();
    if (id !== '') return id;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new IngestError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
  }
  const id = crypto.randomUUID();
  replaceFileDurably(file, `${file}.dbtmp`, Buffer.from(id, 'latin1'), dir);
  return id;
}
