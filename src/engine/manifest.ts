/**
 * The MANIFEST: the durable record of which table files make up the database.
 *
 * On disk: MANIFEST-NNNNNN is a log (wal/logFormat.ts) of VersionEdit records in RocksDB's
 * encoding (versionEdit.ts), so RocksDB opens our databases and we open its. Its first record
 * is a snapshot of the whole state (comparator, counters, every live file); each later record
 * is one change, appended and fdatasynced before the change takes effect in memory. CURRENT
 * names the live manifest ("MANIFEST-NNNNNN\n") and is replaced only through a temp file,
 * fsync, rename and directory fsync, so it always names a complete, durable manifest.
 *
 * Contract:
 * - `recoverManifest(dir)` replays the manifest CURRENT names and returns the state. A torn
 *   last edit (a crash mid-append, never acknowledged) is dropped; damage in the middle, edits
 *   that delete files that are not live or add files that already are, or counters behind the
 *   files they describe, are CorruptionErrors naming the manifest and the edit's offset.
 * - `ManifestWriter.create` starts a new manifest from a state snapshot and points CURRENT at
 *   it; `append` logs an edit durably. The engine starts a new manifest on every open, so a
 *   manifest never grows across opens and the old one becomes obsolete. That is also how a
 *   database in this engine's pre-RocksDB manifest encoding is upgraded: it is read (legacy
 *   new-file records decode too) and the first open writes the state back in RocksDB's.
 * - Only RocksDB's default column family is kept. Edits of other column families are replayed
 *   only to learn which exist; if any is still live at the end, or an edit names a feature this
 *   engine cannot honour (blob files, user-defined timestamps, db_paths), or the comparator is
 *   not bytewise, recovery throws NOT_SUPPORTED naming it, having written nothing.
 */
import * as fs from 'fs';
import { CorruptionError, IngestError } from '../util/errors';
import { FileMetaData, NUM_LEVELS, VersionEdit } from './versionEdit';
import { LogReader, DroppedTail } from './wal/logReader';
import { LogWriter } from './wal/logWriter';
import { currentFileName, manifestBaseName, manifestFileName, parseFileName, FileKind, tempFileName } from './fileNames';
import { replaceFileDurably, syncDir } from './durableFs';

/** RocksDB's name for bytewise key order; stored so a database is never read under another order. */
export const BYTEWISE_COMPARATOR_NAME = 'leveldb.BytewiseComparator';
/** RocksDB's default column family: the one this engine keeps. */
export const DEFAULT_COLUMN_FAMILY_ID = 0;

export interface ManifestState {
  comparator: string | null;
  /** WALs numbered below this hold nothing that is not in table files. */
  logNumber: number;
  nextFileNumber: number;
  lastSequence: number;
  /** Live files per level by file number, in the order the edits added them. */
  levels: Map<number, FileMetaData>[];
  /** Column families other than the default that are live (RocksDB databases): id -> name. */
  otherColumnFamilies: Map<number, string>;
  /** Features the edits use that this engine cannot honour (see VersionEdit.unsupported). */
  unsupported: Set<string>;
}

export function emptyManifestState(): ManifestState {
  const levels: Map<number, FileMetaData>[] = [];
  for (let i = 0; i < NUM_LEVELS; i++) levels.push(new Map());
  return {
    comparator: null,
    logNumber: 0,
    nextFileNumber: 1,
    lastSequence: 0,
    levels,
    otherColumnFamilies: new Map(),
    unsupported: new Set(),
  };
}

/** A copy whose level maps can change without touching `state`'s. */
export function copyManifestState(state: ManifestState): ManifestState {
  return { ...state, levels: state.levels.map((l) => new Map(l)) };
}

/** Applies one edit to `state`, validating it against the files already live. */
export function applyEdit(state: ManifestState, edit: VersionEdit, file: string, offset: number): void {
  for (const feature of edit.unsupported) state.unsupported.add(feature);
  // The file counter and the sequence are the database's; everything else is per column family.
  if (edit.nextFileNumber !== null) state.nextFileNumber = edit.nextFileNumber;
  if (edit.lastSequence !== null) state.lastSequence = edit.lastSequence;
  if (edit.columnFamily !== DEFAULT_COLUMN_FAMILY_ID || edit.columnFamilyAdd !== null) {
    if (edit.columnFamilyAdd !== null) state.otherColumnFamilies.set(edit.columnFamily, edit.columnFamilyAdd);
    if (edit.columnFamilyDrop) state.otherColumnFamilies.delete(edit.columnFamily);
    return;
  }
  if (edit.comparator !== null) {
    if (state.comparator !== null && state.comparator !== edit.comparator) {
      throw new CorruptionError(file, offset, `comparator changes from ${state.comparator} to ${edit.comparator}`);
    }
    state.comparator = edit.comparator;
  }
  if (edit.logNumber !== null) state.logNumber = edit.logNumber;
  for (const d of edit.deletedFiles) {
    if (!state.levels[d.level].delete(d.fileNumber)) {
      throw new CorruptionError(file, offset, `edit deletes file ${d.fileNumber} from level ${d.level}, where it is not live`);
    }
  }
  for (const { level, file: meta } of edit.newFiles) {
    for (let l = 0; l < NUM_LEVELS; l++) {
      if (state.levels[l].has(meta.fileNumber)) {
        throw new CorruptionError(
          file,
          offset,
          `edit adds file ${meta.fileNumber} to level ${level}, but it is already live in level ${l}`,
        );
      }
    }
    state.levels[level].set(meta.fileNumber, meta);
  }
}

/** An edit that recreates `state` from nothing: the first record of a new manifest. */
export function snapshotEdit(state: ManifestState): VersionEdit {
  const edit = new VersionEdit();
  edit.comparator = state.comparator ?? BYTEWISE_COMPARATOR_NAME;
  edit.logNumber = state.logNumber;
  edit.prevLogNumber = 0; // RocksDB's snapshot carries it; always 0 since LevelDB's recovery went
  edit.nextFileNumber = state.nextFileNumber;
  edit.maxColumnFamily = DEFAULT_COLUMN_FAMILY_ID;
  edit.lastSequence = state.lastSequence;
  for (let level = 0; level < NUM_LEVELS; level++) {
    for (const meta of state.levels[level].values()) edit.addFile(level, meta);
  }
  return edit;
}

/** The manifest file number CURRENT names, or null when there is no CURRENT (no database). */
export function readCurrent(dir: string): number | null {
  const path = currentFileName(dir);
  let text: string;
  try {
    text = fs.readFileSync(path, 'latin1');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new IngestError('IO', `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  const parsed = text.endsWith('\n') ? parseFileName(text.slice(0, -1)) : null;
  if (parsed === null || parsed.kind !== FileKind.Manifest || parsed.number < 0) {
    throw new CorruptionError(path, 0, `CURRENT does not name a manifest: ${JSON.stringify(text.slice(0, 64))}`);
  }
  return parsed.number;
}

/** Points CURRENT at MANIFEST-`manifestNumber`, atomically and durably. */
export function setCurrent(dir: string, manifestNumber: number): void {
  replaceFileDurably(
    currentFileName(dir),
    tempFileName(dir, manifestNumber),
    Buffer.from(`${manifestBaseName(manifestNumber)}\n`, 'latin1'),
    dir,
  );
}

export interface RecoveredManifest {
  state: ManifestState;
  manifestNumber: number;
  editCount: number;
  droppedTail: DroppedTail | null;
}

/** Replays the manifest CURRENT names; null when the directory holds no database. */
export function recoverManifest(dir: string): RecoveredManifest | null {
  const manifestNumber = readCurrent(dir);
  if (manifestNumber === null) return null;
  const path = manifestFileName(dir, manifestNumber);
  if (!fs.existsSync(path)) throw new CorruptionError(path, 0, 'CURRENT names a manifest that does not exist');
  const state = emptyManifestState();
  let editCount = 0;
  const reader = LogReader.forEachRecord(path, (record, offset) => {
    applyEdit(state, VersionEdit.decode(record, path, offset), path, offset);
    editCount++;
  });
  if (editCount === 0 || state.comparator === null) {
    throw new CorruptionError(path, 0, 'manifest holds no snapshot record');
  }
  refuseUnsupported(dir, state);
  // RocksDB names its new manifest after the recorded next file number, so that number may equal
  // the manifest's own: raise past it. A live table or WAL at or past it is real damage.
  state.nextFileNumber = Math.max(state.nextFileNumber, manifestNumber + 1);
  let maxFileNumber = state.logNumber - 1;
  for (const level of state.levels) for (const n of level.keys()) maxFileNumber = Math.max(maxFileNumber, n);
  if (state.nextFileNumber <= maxFileNumber) {
    throw new CorruptionError(path, 0, `next file number ${state.nextFileNumber} is not above file number ${maxFileNumber} in use`);
  }
  return { state, manifestNumber, editCount, droppedTail: reader.droppedTail };
}

/** NOT_SUPPORTED naming what the recovered state uses that this engine cannot honour. */
function refuseUnsupported(dir: string, state: ManifestState): void {
  const comparator = state.comparator ?? BYTEWISE_COMPARATOR_NAME;
  const reasons = [...state.unsupported];
  if (comparator.startsWith(`${BYTEWISE_COMPARATOR_NAME}.u`) || /\.u\d+ts$/.test(comparator)) {
    reasons.push(`user-defined timestamps (comparator ${comparator})`);
  } else if (comparator !== BYTEWISE_COMPARATOR_NAME) {
    reasons.push(`comparator ${comparator}; only ${BYTEWISE_COMPARATOR_NAME} is supported`);
  }
  if (state.otherColumnFamilies.size > 0) {
    const names = [...state.otherColumnFamilies.values()].map((n) => JSON.stringify(n)).join(', ');
    reasons.push(`column families other than "default" (${names})`);
  }
  if (reasons.length === 0) return;
  throw new IngestError('NOT_SUPPORTED', `database ${dir} uses ${reasons.join('; ')}: not supported, nothing was changed`);
}

/** Appends edits to a live manifest; every append is durable before it returns. */
export class ManifestWriter {
  readonly fileNumber: number;
  private readonly log: LogWriter;

  private constructor(fileNumber: number, log: LogWriter) {
    this.fileNumber = fileNumber;
    this.log = log;
  }

  /**
   * Writes MANIFEST-`fileNumber` holding a snapshot of `state`, makes it durable, and points
   * CURRENT at it. Until CURRENT is replaced, the previous manifest stays authoritative, so a
   * crash anywhere in here loses nothing.
   */
  static create(dir: string, fileNumber: number, state: ManifestState): ManifestWriter {
    const log = LogWriter.create(manifestFileName(dir, fileNumber), { sync: true });
    try {
      log.addRecord(snapshotEdit(state).encode());
      syncDir(dir);
      setCurrent(dir, fileNumber);
    } catch (err) {
      log.close();
      throw err;
    }
    return new ManifestWriter(fileNumber, log);
  }

  append(edit: VersionEdit): void {
    this.log.addRecord(edit.encode());
  }

  get sizeBytes(): number {
    return this.log.sizeBytes;
  }

  close(): void {
    this.log.close();
  }
}
