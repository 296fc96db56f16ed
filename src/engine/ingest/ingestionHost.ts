/**
 * What ingestion needs from the engine: a narrow view of its internals, implemented by
 * Engine.ingestionHost() (engine.ts) and by nothing else, so that the ingestion code in this
 * directory depends on an interface rather than on the engine class.
 *
 * Contract:
 * - Every method except flushMemtables is synchronous. Ingestion makes its placement decisions
 *   and calls installIngestedFiles in one synchronous step, so no write, flush or compaction
 *   install can interleave between "what is in the database" and "the ingested files are in".
 * - stopWrites() makes writers wait (they are not failed) until the returned function is called;
 *   calls nest. Ingestion uses it only around a memtable flush it needs.
 * - latches are the engine's span latches: every write checks them in the synchronous step of its
 *   commit, so a span latched here receives no write until released.
 */
import type { Snapshot } from '../snapshot';
import { Memtable } from '../memtable/memtable';
import { SpanLatches } from '../spanLatches';
import { RunningCompactions } from '../runningCompactions';
import { TableCache } from '../tableCache';
import { Version } from '../version';
import { VersionEdit } from '../versionEdit';

export interface IngestionHost {
  readonly dir: string;
  readonly tableCache: TableCache;
  readonly runningCompactions: RunningCompactions;
  readonly latches: SpanLatches;
  /** How long an ingestion waits for an overlapping one's latch (EngineOptions.latchWaitTimeoutMs). */
  readonly latchTimeoutMs: number;
  /** A snapshot at the last sequence number now (released by the caller). */
  getSnapshot(): Snapshot;
  /** Levels in use (the compaction option numLevels): the bottom level is numLevels - 1. */
  readonly numLevels: number;
  /** Throws if the engine is closed or has stopped accepting writes after a failure. */
  checkWritable(): void;
  currentVersion(): Version;
  /** The active memtable and the immutable ones not yet flushed. */
  memtables(): readonly Memtable[];
  lastSequence(): number;
  /** True while any snapshot (or iterator read point) is live. */
  hasLiveSnapshots(): boolean;
  newFileNumber(): number;
  /** Makes the active memtable immutable and waits until every memtable is flushed. */
  flushMemtables(): Promise<void>;
  /** Writers wait from now until the returned function is called (once). */
  stopWrites(): () => void;
  /**
   * Makes the directory entries of the edit's new files durable, raises the last sequence number
   * to `lastSequence`, logs the edit in the manifest and installs the new version.
   */
  installIngestedFiles(edit: VersionEdit, lastSequence: number): void;
}
