/**
 * Worker-thread entry for inspectFiles.ts: inspects external SSTs (externalFile.ts) off the
 * engine's thread.
 *
 * Message protocol: the worker serves requests for its whole life (it stays warm: the
 * verification code is JIT-compiled once, not per ingestion). Each request is
 * {id, task: InspectTask}; the worker answers each with {id, reply: InspectReply}, one at a time,
 * in order. Keys travel as Uint8Arrays with their own ArrayBuffers (a Buffer view into Node's
 * shared pool would drag the whole pool slab across). An error travels as its fields; the engine
 * side rebuilds it.
 */
import { parentPort, workerData } from 'worker_threads';
import { CorruptionError, IngestError } from '../../util/errors';
import { inspectExternalFile } from './externalFile';

export interface InspectTask {
  paths: string[];
  verifyChecksums: boolean;
}

export interface InspectedFileMessage {
  path: string;
  fileSizeBytes: number;
  smallest: Uint8Array;
  largest: Uint8Array;
  numPointEntries: number;
  numRangeDeletions: number;
  largestKeyBytes: number | null;
  largestValueBytes: number | null;
}

export interface InspectErrorMessage {
  name: string;
  message: string;
  code: string | null;
  file: string | null;
  offset: number | null;
  stack: string | null;
}

export type InspectReply = { ok: true; files: InspectedFileMessage[] } | { ok: false; error: InspectErrorMessage };

export function runInspectTask(task: InspectTask): InspectReply {
  try {
    const files = task.paths.map((p) => {
      const info = inspectExternalFile(p, { verifyChecksums: task.verifyChecksums });
      return {
        path: info.path,
        fileSizeBytes: info.fileSizeBytes,
        smallest: new Uint8Array(info.bounds.smallest),
        largest: new Uint8Array(info.bounds.largest),
        numPointEntries: info.numPointEntries,
        numRangeDeletions: info.numRangeDeletions,
        largestKeyBytes: info.largestKeyBytes,
        largestValueBytes: info.largestValueBytes,
      };
    });
    return { ok: true, files };
  } catch (err) {
    const e = err as Error;
    return {
      ok: false,
      error: {
        name: e.name,
        message: e.message,
        code: err instanceof IngestError ? err.code : null,
        file: err instanceof CorruptionError ? err.file : null,
        offset: err instanceof CorruptionError ? err.offset : null,
        stack: e.stack ?? null,
      },
    };
  }
}

export interface InspectRequest {
  id: number;
  task: InspectTask;
}

export interface InspectResponse {
  id: number;
  reply: InspectReply;
}

if (parentPort !== null && workerData !== null && typeof workerData === 'object' && 'inspectWorker' in workerData) {
  const port = parentPort;
  port.on('message', (request: InspectRequest) => {
    const response: InspectResponse = { id: request.id, reply: runInspectTask(request.task) };
    port.postMessage(response);
  });
}
