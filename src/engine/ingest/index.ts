/**
 * Ingestion of external SST files into the engine: the public API in one place.
 *
 *   ingestExternalFiles(engine, paths, options)   link the files in atomically (ingestionJob.ts)
 *   planIngestion(engine, paths, options)         where they would go, without changing anything
 *
 * Both are also Engine methods; these free functions serve callers (the CLI, the import
 * pipeline) that think of ingestion as a step of their own.
 */
import type { Engine } from '../engine';
import type { IngestOptions, IngestionPlan, IngestionResult } from './ingestionJob';

export type { IngestOptions, IngestionPlan, IngestionResult, IngestedFile, PlannedFile } from './ingestionJob';
export type { ReplaceRange } from './replaceRange';
export { VERIFY_IN_WORKER_MIN_BYTES } from './inspectFiles';

export function ingestExternalFiles(engine: Engine, paths: readonly string[], options?: IngestOptions): Promise<IngestionResult> {
  return engine.ingestExternalFiles(paths, options);
}

export function planIngestion(engine: Engine, paths: readonly string[], options?: IngestOptions): Promise<IngestionPlan> {
  return engine.planIngestion(paths, options);
}
