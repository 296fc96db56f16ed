/**
 * Names of the files in a database directory, and their parser.
 *
 * Layout of a database directory (RocksDB's naming, so `ls` reads the same):
 *   CURRENT              one line, "MANIFEST-NNNNNN\n": the manifest that describes the database
 *   MANIFEST-NNNNNN      version edits, in the log format (see wal/logFormat.ts)
 *   NNNNNN.log           a write-ahead log, in the log format, holding write batches
 *   NNNNNN.sst           a table file (BlockBasedTable format)
 *   NNNNNN.dbtmp         a temporary file, renamed into place once durable (CURRENT is made so)
 *   LOCK                 held while a process has the database open (see lockFile.ts); RocksDB
 *                        leaves an empty one behind, which this engine takes over when unlocked
 *   IDENTITY             the database's unique id (a UUID, no newline), as RocksDB writes it
 *   OPTIONS-NNNNNN       the options the database was last opened with, in RocksDB's INI format
 *                        (rocksdbOptions.ts); RocksDB's own tell the open what to refuse
 *   LOG, LOG.old.*       RocksDB's info logs: left alone
 *   .import-tmp-P-T-XXXXXX  a scratch directory: private to the process with pid P and start time T
 *                        (clock ticks since boot, or "x" when unknown), where it prepares files to
 *                        ingest before it opens the database (see scratchDirs.ts). Open removes
 *                        those whose owner is no longer running.
 *
 * All numbered files share one counter (the manifest's next file number), so a number names one
 * file for the lifetime of the database and the kind of file follows from its suffix.
 */
import * as path from 'path';

export enum FileKind {
  Current,
  Lock,
  Manifest,
  Log,
  Table,
  Temp,
  Options,
  Identity,
}

export interface ParsedFileName {
  kind: FileKind;
  /** The file number; 0 for CURRENT and LOCK. */
  number: number;
}

/** Zero-padded to 6 digits like RocksDB; larger numbers just grow wider. */
function padNumber(n: number): string {
  return String(n).padStart(6, '0');
}

export const CURRENT_FILE_NAME = 'CURRENT';
export const LOCK_FILE_NAME = 'LOCK';
export const IDENTITY_FILE_NAME = 'IDENTITY';

export function identityFileName(dir: string): string {
  return path.join(dir, IDENTITY_FILE_NAME);
}

export function optionsFileName(dir: string, fileNumber: number): string {
  return path.join(dir, `OPTIONS-${padNumber(fileNumber)}`);
}

export function currentFileName(dir: string): string {
  return path.join(dir, CURRENT_FILE_NAME);
}

export function lockFileName(dir: string): string {
  return path.join(dir, LOCK_FILE_NAME);
}

export function manifestBaseName(fileNumber: number): string {
  return `MANIFEST-${padNumber(fileNumber)}`;
}

export function manifestFileName(dir: string, fileNumber: number): string {
  return path.join(dir, manifestBaseName(fileNumber));
}

export function logFileName(dir: string, fileNumber: number): string {
  return path.join(dir, `${padNumber(fileNumber)}.log`);
}

export function tableFileName(dir: string, fileNumber: number): string {
  return path.join(dir, `${padNumber(fileNumber)}.sst`);
}

export function tempFileName(dir: string, fileNumber: number): string {
  return path.join(dir, `${padNumber(fileNumber)}.dbtmp`);
}

/** The prefix every scratch directory's name starts with. */
export const SCRATCH_DIR_PREFIX = '.import-tmp-';
/** Start time in a scratch directory's name when /proc does not tell it ("-" would read as a separator). */
export const UNKNOWN_START_TIME = 'x';

export interface ScratchDirOwner {
  pid: number;
  /** Field 22 of /proc/<pid>/stat, or '-' when unknown. */
  startTime: string;
}

/** The prefix of the owner's scratch directories in `dir`, for mkdtemp (which appends 6 characters). */
export function scratchDirPrefix(dir: string, owner: ScratchDirOwner): string {
  const start = owner.startTime === '-' ? UNKNOWN_START_TIME : owner.startTime;
  return path.join(dir, `${SCRATCH_DIR_PREFIX}${owner.pid}-${start}-`);
}

const SCRATCH_DIR = /^\.import-tmp-(\d+)-(\d+|x)-[A-Za-z0-9]{6}$/;

/** The owner a scratch directory's base name records; null if it is not one (or names no owner). */
export function parseScratchDirName(baseName: string): ScratchDirOwner | null {
  const m = SCRATCH_DIR.exec(baseName);
  if (m === null) return null;
  const pid = safeNumber(m[1]);
  if (pid <= 0) return null;
  return { pid, startTime: m[2] === UNKNOWN_START_TIME ? '-' : m[2] };
}

const NUMBERED = /^(\d+)\.(log|sst|dbtmp)$/;
const MANIFEST = /^MANIFEST-(\d+)$/;
const OPTIONS = /^OPTIONS-(\d+)$/;

/** Parses a base name; returns null for files that are not the database's. */
export function parseFileName(baseName: string): ParsedFileName | null {
  if (baseName === CURRENT_FILE_NAME) return { kind: FileKind.Current, number: 0 };
  if (baseName === LOCK_FILE_NAME) return { kind: FileKind.Lock, number: 0 };
  if (baseName === IDENTITY_FILE_NAME) return { kind: FileKind.Identity, number: 0 };
  let m = MANIFEST.exec(baseName);
  if (m !== null) return { kind: FileKind.Manifest, number: safeNumber(m[1]) };
  m = OPTIONS.exec(baseName);
  if (m !== null) return { kind: FileKind.Options, number: safeNumber(m[1]) };
  m = NUMBERED.exec(baseName);
  if (m === null) return null;
  const number = safeNumber(m[1]);
  const kind = m[2] === 'log' ? FileKind.Log : m[2] === 'sst' ? FileKind.Table : FileKind.Temp;
  return { kind, number };
}

function safeNumber(digits: string): number {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : -1;
}
