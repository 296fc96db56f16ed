/**
 * Staged imports: the SSTs a client sends one by one (PUT /v1/imports/{id}/files/{name}) and
 * lands at once (POST /v1/imports/{id}/commit), kept on disk so they outlive a restart of the
 * server (routes/stagedFiles.ts has the routes; docs/serve.md the API).
 *
 * On disk, inside the database directory (a commit hard-links the files in: same file system):
 *   DIR/.staged-imports/<id>/meta.json     {"id", "createdAt", "updatedAt" (ISO 8601), "files":
 *                                          [{"name", "sizeBytes", "sha256"}]}: the record, replaced
 *                                          atomically (temp file, fsync, rename, directory fsync)
 *   DIR/.staged-imports/<id>/files/<name>  a staged file: verified on arrival, fsynced, renamed in
 *   DIR/.staged-imports/<id>/incoming/     bodies being received (emptied at start)
 * meta.json is the truth: a file under files/ it does not list (a crash between the rename and the
 * record) is not staged, and the next PUT of its name replaces it; an import directory without a
 * readable meta.json is removed at start. The engine's startup cleanup removes only its own
 * `.import-tmp-*` scratch directories (engine/scratchDirs.ts), so this directory is left alone.
 *
 * Limits: the bytes staged in every import, bodies being received included, stay within
 * maxStagedBytes (reserve(): a PUT past it is refused before its body is read, 507 NO_SPACE). An
 * import not touched (a file staged, a commit tried) for stagedMaxAgeMs is removed at start and
 * then hourly (the timer is unref'd). An import being committed takes no PUT, DELETE or second
 * commit (409 CONFLICT), one receiving a file no DELETE or commit (409); neither is expired meanwhile. All record changes are synchronous, so
 * concurrent requests never interleave inside one.
 */
import * as fs from 'fs';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { replaceFileDurably, syncDir } from '../engine/durableFs';
import { IngestError } from '../util/errors';
import { HttpError, badRequest } from './httpErrors';
import { ServerLimits } from './limits';

export const STAGED_IMPORTS_DIR = '.staged-imports';
const META_FILE = 'meta.json';
const EXPIRY_INTERVAL_MS = 3600_000;
const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const FILE_NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
/** `sst` is the multipart upload's path (POST /v1/imports/sst), not an id. */
const RESERVED_IDS = new Set(['sst']);

export interface StagedFile {
  name: string;
  sizeBytes: number;
  sha256: string;
}

export interface StagedImport {
  id: string;
  files: StagedFile[];
  totalBytes: number;
  createdAt: string;
  updatedAt: string;
}

interface StagingCounters {
  filesStaged: number;
  identicalPuts: number;
  commits: number;
  expired: number;
}

export function checkImportId(id: string): string {
  if (!ID_PATTERN.test(id) || RESERVED_IDS.has(id)) {
    throw badRequest(`import id ${JSON.stringify(id.slice(0, 80))}: use 1..64 characters of A-Z a-z 0-9 _ - (not "sst")`);
  }
  return id;
}

/** A staged file's name: NAME.sst, or NAME.origins (the row origins of NAME.sst, so conflicts name their CSV line). */
export function checkStagedFileName(name: string): string {
  if (!FILE_NAME_PATTERN.test(name) || !(name.endsWith('.sst') || name.endsWith('.origins')) || name.startsWith('.')) {
    throw badRequest(
      `file name ${JSON.stringify(name.slice(0, 140))}: use NAME.sst or NAME.origins, 1..128 characters of A-Z a-z 0-9 . _ -`,
    );
  }
  return name;
}

function notFound(id: string): HttpError {
  return new HttpError(404, 'NOT_FOUND', `no staged import ${id}`);
}

function totalOf(files: readonly StagedFile[]): number {
  return files.reduce((n, f) => n + f.sizeBytes, 0);
}

export class StagedImports {
  readonly root: string;
  private readonly imports = new Map<string, StagedImport>();
  /** Imports being committed. */
  private readonly committing = new Set<string>();
  /** Bodies being received, per import: their import is not expired meanwhile. */
  private readonly receiving = new Map<string, number>();
  private reservedBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  readonly counters: StagingCounters = { filesStaged: 0, identicalPuts: 0, commits: 0, expired: 0 };

  constructor(
    dbDir: string,
    private readonly limits: Pick<ServerLimits, 'maxStagedBytes' | 'stagedMaxAgeMs'>,
    private readonly log: (line: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.root = path.join(dbDir, STAGED_IMPORTS_DIR);
  }

  /** Loads the records, drops what a crash left half done, expires the stale; then hourly. */
  open(): void {
    try {
      // Made by the first PUT: a database never staged into has no such directory.
      if (fs.existsSync(this.root)) for (const id of fs.readdirSync(this.root)) this.load(id);
    } catch (err) {
      if (err instanceof IngestError) throw err;
      throw new IngestError('IO', `cannot read the staged imports in ${this.root}: ${(err as Error).message}`, { cause: err });
    }
    this.expire();
    this.removeRootIfEmpty();
    this.timer = setInterval(() => this.expire(), EXPIRY_INTERVAL_MS);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private load(id: string): void {
    const dir = path.join(this.root, id);
    let record: StagedImport | null = null;
    try {
      const meta = JSON.parse(fs.readFileSync(path.join(dir, META_FILE), 'utf8')) as Omit<StagedImport, 'totalBytes'>;
      if (meta.id === id && Array.isArray(meta.files)) record = { ...meta, totalBytes: totalOf(meta.files) };
    } catch {
      // No record (a crash before the first file was staged) or an unreadable one: removed below.
    }
    if (record === null || !ID_PATTERN.test(id)) {
      this.log(`staged imports: removing ${dir}: no valid ${META_FILE}`);
      fs.rmSync(dir, { recursive: true, force: true });
      return;
    }
    fs.rmSync(path.join(dir, 'incoming'), { recursive: true, force: true });
    this.imports.set(id, record);
  }

  /** Removes the imports untouched for stagedMaxAgeMs (not one being received or committed); returns their ids. */
  expire(): string[] {
    const removed: string[] = [];
    for (const record of [...this.imports.values()]) {
      if (this.isBusy(record.id)) continue;
      if (this.now() - Date.parse(record.updatedAt) <= this.limits.stagedMaxAgeMs) continue;
      try {
        this.remove(record.id);
        removed.push(record.id);
        this.counters.expired++;
      } catch (err) {
        this.log(`staged imports: cannot expire ${record.id}: ${(err as Error).message}`);
      }
    }
    if (removed.length > 0) this.log(`staged imports: expired ${removed.join(', ')} (untouched for over ${this.limits.stagedMaxAgeMs} ms)`);
    return removed;
  }

  private isBusy(id: string): boolean {
    return this.committing.has(id) || (this.receiving.get(id) ?? 0) > 0;
  }

  list(): StagedImport[] {
    return [...this.imports.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  get(id: string): StagedImport {
    const record = this.imports.get(id);
    if (record === undefined) throw notFound(id);
    return record;
  }

  /** The bytes staged in every import. */
  get stagedBytes(): number {
    let n = 0;
    for (const r of this.imports.values()) n += r.totalBytes;
    return n;
  }

  filesDir(id: string): string {
    return path.join(this.root, id, 'files');
  }

  private refuseWhileCommitting(id: string, what: string): void {
    if (this.committing.has(id)) throw new HttpError(409, 'CONFLICT', `staged import ${id} is being committed: ${what} refused`);
  }

  /**
   * Room for a body of `sizeBytes` for import `id` (checked before the body is read) and a
   * private directory to receive it in; `release` gives both back.
   */
  beginReceiving(id: string, sizeBytes: number): { dir: string; release: () => void } {
    this.refuseWhileCommitting(id, 'a new file');
    const staged = this.stagedBytes + this.reservedBytes;
    if (staged + sizeBytes > this.limits.maxStagedBytes) {
      throw new HttpError(
        507,
        'NO_SPACE',
        `staging quota: ${sizeBytes} more bytes would take the staged imports to ${staged + sizeBytes}, over the limit of ${this.limits.maxStagedBytes}; commit or delete staged imports first`,
      );
    }
    const incoming = path.join(this.root, id, 'incoming');
    fs.mkdirSync(incoming, { recursive: true });
    const dir = fs.mkdtempSync(path.join(incoming, 'put-'));
    this.reservedBytes += sizeBytes;
    this.receiving.set(id, (this.receiving.get(id) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.reservedBytes -= sizeBytes;
      this.receiving.set(id, (this.receiving.get(id) ?? 1) - 1);
      fs.rmSync(dir, { recursive: true, force: true });
      // A first PUT that failed leaves no import behind.
      if (!this.imports.has(id) && !this.isBusy(id)) {
        fs.rmSync(path.join(this.root, id), { recursive: true, force: true });
        this.removeRootIfEmpty();
      }
    };
    return { dir, release };
  }

  /** The staged file of that name, or undefined. */
  fileOf(id: string, name: string): StagedFile | undefined {
    return this.imports.get(id)?.files.find((f) => f.name === name);
  }

  /** Renames a received, verified and fsynced file into place and records it (creating the import). */
  addFile(id: string, received: string, file: StagedFile): void {
    this.refuseWhileCommitting(id, 'a new file');
    const dir = path.join(this.root, id);
    const filesDir = this.filesDir(id);
    fs.mkdirSync(filesDir, { recursive: true });
    fs.renameSync(received, path.join(filesDir, file.name));
    syncDir(filesDir);
    const at = new Date(this.now()).toISOString();
    const before = this.imports.get(id);
    const files = [...(before?.files ?? []).filter((f) => f.name !== file.name), file].sort((a, b) => a.name.localeCompare(b.name));
    const record: StagedImport = { id, files, totalBytes: totalOf(files), createdAt: before?.createdAt ?? at, updatedAt: at };
    this.writeRecord(dir, record);
    if (before === undefined) {
      syncDir(this.root);
      syncDir(path.dirname(this.root));
    }
    this.imports.set(id, record);
    this.counters.filesStaged++;
  }

  private writeRecord(dir: string, record: StagedImport): void {
    const meta = { id: record.id, createdAt: record.createdAt, updatedAt: record.updatedAt, files: record.files };
    const temp = path.join(dir, `${META_FILE}.${randomBytes(4).toString('hex')}.tmp`);
    replaceFileDurably(path.join(dir, META_FILE), temp, Buffer.from(`${JSON.stringify(meta)}\n`), dir);
  }

  private refuseWhileReceiving(id: string, what: string): void {
    const n = this.receiving.get(id) ?? 0;
    if (n > 0) throw new HttpError(409, 'CONFLICT', `staged import ${id} is still receiving ${n} file(s): ${what} refused`);
  }

  /** Marks `id` as being committed (touching it); `end` unmarks it. 404 unknown, 409 while committing or receiving. */
  beginCommit(id: string): { record: StagedImport; end: () => void } {
    const record = this.get(id);
    this.refuseWhileCommitting(id, 'a second commit');
    this.refuseWhileReceiving(id, 'the commit');
    const touched = { ...record, updatedAt: new Date(this.now()).toISOString() };
    this.writeRecord(path.join(this.root, id), touched);
    this.imports.set(id, touched);
    this.committing.add(id);
    this.counters.commits++;
    return { record: touched, end: () => this.committing.delete(id) };
  }

  /** DELETE: 404 unknown, 409 while being committed or receiving. */
  delete(id: string): void {
    this.get(id);
    this.refuseWhileCommitting(id, 'DELETE');
    this.refuseWhileReceiving(id, 'DELETE');
    this.remove(id);
  }

  /** Forgets and removes the import (after a commit that landed or aborted on conflicts). */
  remove(id: string): void {
    this.imports.delete(id);
    const dir = path.join(this.root, id);
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      throw new IngestError('IO', `cannot remove staged import ${id}: ${(err as Error).message}`, { cause: err });
    }
    this.removeRootIfEmpty();
  }

  /** The staging directory goes with its last import: a database with nothing staged has none (no leftovers). */
  private removeRootIfEmpty(): void {
    try {
      fs.rmdirSync(this.root);
    } catch {
      // Not empty (another import is staged or arriving), or already gone.
    }
  }
}
