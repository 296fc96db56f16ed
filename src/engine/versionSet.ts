/**
 * The version set: the current Version, the live manifest, and the database's counters (next
 * file number, last sequence number, oldest live WAL).
 *
 * Contract:
 * - `logAndApply(edit)` stamps the edit with the counters, appends it to the manifest durably,
 *   and only then installs the new Version: a crash before the append returns leaves the old
 *   state, after it the new one. Edits are applied one at a time (the engine calls it from
 *   synchronous code only).
 * - Every Version is reference-counted (see version.ts). A file becomes obsolete when no live
 *   version (the current one, or one an iterator still reads) holds it; the version set then
 *   reports it through `onObsoleteFile` so the engine can close and delete it.
 * - The manifest is rolled over to a fresh snapshot when it outgrows maxManifestFileSizeBytes.
 * - Read-only (readOnlyManifestNumber): the recovered manifest is adopted as it is, nothing is
 *   written or deleted, and logAndApply fails with NOT_SUPPORTED.
 * - File numbers come from one counter. Numbers handed out but not yet in an edit (a WAL, a table
 *   being written) are recorded by the next edit's next-file-number; after a crash, recovery
 *   bumps the counter past every numbered file it finds, so no number is ever reused.
 */
import { IngestError, assert } from '../util/errors';
import { ManifestState, ManifestWriter, applyEdit, copyManifestState } from './manifest';
import { manifestFileName } from './fileNames';
import { removeIfExists } from './durableFs';
import { Version } from './version';
import { FileMetaData, NUM_LEVELS, VersionEdit } from './versionEdit';

export const DEFAULT_MAX_MANIFEST_FILE_SIZE_BYTES = 64 * 1024 * 1024;

export class VersionSet {
  readonly dir: string;
  private state: ManifestState;
  /** null when read-only. */
  private manifest: ManifestWriter | null;
  /** The recovered manifest's number, when read-only. */
  private readonly readOnlyManifestNumber: number | null;
  private currentVersion: Version;
  private readonly liveVersions = new Set<Version>();
  /** Live-version count per file number. */
  private readonly fileRefs = new Map<number, number>();
  private readonly maxManifestFileSizeBytes: number;
  private readonly onObsoleteFile: (fileNumber: number) => void;

  /**
   * Starts a new manifest holding `state` (the recovered state with any recovery changes), points
   * CURRENT at it and deletes the previous manifest; or, with `readOnlyManifestNumber`, adopts the
   * recovered manifest of that number and writes nothing.
   */
  constructor(
    dir: string,
    state: ManifestState,
    previousManifestNumber: number | null,
    opts: { maxManifestFileSizeBytes?: number; onObsoleteFile: (fileNumber: number) => void; readOnlyManifestNumber?: number },
  ) {
    this.dir = dir;
    this.state = state;
    this.maxManifestFileSizeBytes = opts.maxManifestFileSizeBytes ?? DEFAULT_MAX_MANIFEST_FILE_SIZE_BYTES;
    this.onObsoleteFile = opts.onObsoleteFile;
    this.readOnlyManifestNumber = opts.readOnlyManifestNumber ?? null;
    if (this.readOnlyManifestNumber !== null) {
      this.manifest = null;
    } else {
      this.manifest = ManifestWriter.create(dir, this.newFileNumber(), state);
      if (previousManifestNumber !== null) removeIfExists(manifestFileName(dir, previousManifestNumber));
    }
    this.currentVersion = this.buildVersion();
    this.install(this.currentVersion);
  }

  get current(): Version {
    return this.currentVersion;
  }

  get lastSequence(): number {
    return this.state.lastSequence;
  }

  set lastSequence(seq: number) {
    assert(seq >= this.state.lastSequence, `last sequence may not go back from ${this.state.lastSequence} to ${seq}`);
    this.state.lastSequence = seq;
  }

  get logNumber(): number {
    return this.state.logNumber;
  }

  get manifestFileNumber(): number {
    return this.manifest?.fileNumber ?? (this.readOnlyManifestNumber as number);
  }

  newFileNumber(): number {
    return this.state.nextFileNumber++;
  }

  /**
   * Appends `edit` (stamped with next file number and last sequence) to the manifest, then
   * installs the resulting version.
   */
  logAndApply(edit: VersionEdit): Version {
    if (this.manifest === null)
      throw new IngestError('NOT_SUPPORTED', `database ${this.dir} is open read-only: its manifest takes no edits`);
    if (this.manifest.sizeBytes > this.maxManifestFileSizeBytes) this.rollManifest();
    edit.nextFileNumber = this.state.nextFileNumber;
    edit.lastSequence = this.state.lastSequence;
    const path = manifestFileName(this.dir, this.manifest.fileNumber);
    // Validate against a copy first, so an invalid edit never reaches the manifest.
    const trial = copyManifestState(this.state);
    applyEdit(trial, edit, path, this.manifest.sizeBytes);
    this.manifest.append(edit);
    this.state = trial;
    const previous = this.currentVersion;
    this.currentVersion = this.buildVersion();
    this.install(this.currentVersion);
    previous.unref();
    return this.currentVersion;
  }

  /** Releases the current version and closes the manifest. */
  close(): void {
    this.manifest?.close();
  }

  /** True when some live version holds the file. */
  isLive(fileNumber: number): boolean {
    return this.fileRefs.has(fileNumber);
  }

  private buildVersion(): Version {
    const files: FileMetaData[][] = [];
    for (let level = 0; level < NUM_LEVELS; level++) files.push([...this.state.levels[level].values()]);
    return new Version(files, (v) => this.release(v));
  }

  private install(v: Version): void {
    v.ref();
    this.liveVersions.add(v);
    for (const n of v.fileNumbers()) this.fileRefs.set(n, (this.fileRefs.get(n) ?? 0) + 1);
  }

  private release(v: Version): void {
    this.liveVersions.delete(v);
    for (const n of v.fileNumbers()) {
      const refs = (this.fileRefs.get(n) ?? 0) - 1;
      if (refs > 0) {
        this.fileRefs.set(n, refs);
      } else {
        this.fileRefs.delete(n);
        this.onObsoleteFile(n);
      }
    }
  }

  /** Writes the state into a fresh manifest and retires the old one. */
  private rollManifest(): void {
    const old = this.manifest as ManifestWriter;
    this.manifest = ManifestWriter.create(this.dir, this.newFileNumber(), this.state);
    old.close();
    removeIfExists(manifestFileName(this.dir, old.fileNumber));
  }
}
