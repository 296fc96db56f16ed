/**
 * Inspecting the files of one ingestion, on the engine's thread or on a worker thread.
 *
 * Verifying a file reads and checks every block (externalFile.ts): around a microsecond per key,
 * seconds for a large ingestion. On the engine's thread that would stall every write for as long,
 * since the engine runs on one event loop; so when checksums are verified and the files total
 * VERIFY_IN_WORKER_MIN_BYTES or more (or verifyInWorker is true), a worker thread inspects them,
 * one after another, while writes go on (on a second core, if there is one). Smaller ingestions
 * are inspected inline: a round trip to the worker costs more than they do.
 *
 * The worker is one per process, started on first use and kept (unreferenced, so it never keeps
 * the process alive) because its JIT-compiled verification code is what makes it fast: a fresh
 * worker per ingestion verifies at a third of the speed. Requests queue in it; a worker that dies
 * fails the requests it holds and is replaced on the next use. shutdownInspectionWorker() ends it
 * (for tests and orderly exits).
 *
 * Either way the result and the errors are the same: an error from the worker is rebuilt as an
 * IngestError (a CorruptionError keeps its file and offset) with the original code and message.
 */
import * as fs from 'fs';
import { Worker } from 'worker_threads';
import { CorruptionError, IngestError, ErrorCode } from '../../util/errors';
import { startModuleWorker } from '../../util/workerBootstrap';
import { ExternalFileInfo, inspectExternalFile, rangeOfBounds } from './externalFile';
import { InspectErrorMessage, InspectReply, InspectRequest, InspectResponse, InspectTask } from './inspectWorker';

/** Files totalling at least this many bytes are verified on the worker thread. */
export const VERIFY_IN_WORKER_MIN_BYTES = 4 * 1024 * 1024;

export interface InspectFilesOptions {
  verifyChecksums?: boolean;
  /** true: always use the worker; false: never; undefined: by size (see above). */
  verifyInWorker?: boolean;
  /** The worker thread's CPU priority drop (one worker per value, started on first use). */
  workerNiceness?: number;
}

function totalSizeBytes(paths: readonly string[]): number {
  let total = 0;
  for (const p of paths) {
    try {
      total += fs.statSync(p).size;
    } catch {
      // inspectExternalFile reports a missing file properly.
    }
  }
  return total;
}

export async function inspectExternalFiles(paths: readonly string[], opts: InspectFilesOptions): Promise<ExternalFileInfo[]> {
  const verifyChecksums = opts.verifyChecksums ?? true;
  const inWorker = verifyChecksums && paths.length > 0 && (opts.verifyInWorker ?? totalSizeBytes(paths) >= VERIFY_IN_WORKER_MIN_BYTES);
  if (!inWorker) return paths.map((p) => inspectExternalFile(p, { verifyChecksums }));
  const reply = await InspectionWorker.get(opts.workerNiceness ?? 0).run({ paths: [...paths], verifyChecksums });
  if (!reply.ok) throw rebuildError(reply.error);
  return reply.files.map((f) => {
    const bounds = { smallest: asBuffer(f.smallest), largest: asBuffer(f.largest) };
    return {
      path: f.path,
      fileSizeBytes: f.fileSizeBytes,
      bounds,
      range: rangeOfBounds(bounds),
      numPointEntries: f.numPointEntries,
      numRangeDeletions: f.numRangeDeletions,
      largestKeyBytes: f.largestKeyBytes,
      largestValueBytes: f.largestValueBytes,
    };
  });
}

/** Ends the inspection worker, if one runs; the next verification in a worker starts a new one. */
export async function shutdownInspectionWorker(): Promise<void> {
  await InspectionWorker.shutdown();
}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

interface PendingRequest {
  resolve: (reply: InspectReply) => void;
  reject: (err: Error) => void;
}

/**
 * The process's inspection workers, one per niceness in use (a thread can lower its priority but,
 * unprivileged, not raise it again): requests by id, answered in order.
 */
class InspectionWorker {
  private static readonly instances = new Map<number, InspectionWorker>();
  private readonly worker: Worker;
  private readonly pending = new Map<number, PendingRequest>();
  private nextId = 1;

  private constructor(private readonly niceness: number) {
    this.worker = startModuleWorker(__filename, 'inspectWorker', { inspectWorker: true }, { niceness });
    this.worker.unref();
    this.worker.on('message', (response: InspectResponse) => {
      const p = this.pending.get(response.id);
      if (p === undefined) return;
      this.pending.delete(response.id);
      if (this.pending.size === 0) this.worker.unref();
      p.resolve(response.reply);
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`file inspection worker exited with code ${code}`)));
  }

  static get(niceness: number): InspectionWorker {
    let w = InspectionWorker.instances.get(niceness);
    if (w === undefined) {
      w = new InspectionWorker(niceness);
      InspectionWorker.instances.set(niceness, w);
    }
    return w;
  }

  static async shutdown(): Promise<void> {
    const all = [...InspectionWorker.instances.values()];
    InspectionWorker.instances.clear();
    await Promise.all(all.map((w) => w.worker.terminate()));
  }

  run(task: InspectTask): Promise<InspectReply> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      // Held while a request is out, so the process waits for the answer.
      this.worker.ref();
      const request: InspectRequest = { id, task };
      this.worker.postMessage(request);
    });
  }

  /** The worker died: its requests fail, and the next use starts another. */
  private fail(err: Error): void {
    if (InspectionWorker.instances.get(this.niceness) === this) InspectionWorker.instances.delete(this.niceness);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
  }
}

function rebuildError(e: InspectErrorMessage): Error {
  let err: Error;
  if (e.code === 'CORRUPTION' && e.file !== null && e.offset !== null) {
    err = new CorruptionError(e.file, e.offset, '');
  } else if (e.code !== null) {
    err = new IngestError(e.code as ErrorCode, e.message);
  } else {
    err = new Error(e.message);
    err.name = e.name;
  }
  err.message = e.message;
  if (e.stack !== null) err.stack = e.stack;
  return err;
}
