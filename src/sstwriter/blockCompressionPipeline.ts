/**
 * Block compression pipeline: stores (compresses (LZ4, ZSTD or Snappy) and checksums) a table's data blocks on a
 * worker thread while the calling thread goes on building the next blocks, and hands the stored
 * blocks back in file order.
 *
 * Why: LZ4 and block checksums are about a third of the CPU time of writing a compressed table
 * (ZSTD, slower to compress, more).
 * Moving them to another core lets block building and compression overlap, which is how a
 * JavaScript writer keeps up with RocksDB's C++ SstFileWriter. (Hashing keys for the filter
 * there too was tried: walking the blocks again cost the worker twice what hashing at add()
 * costs the caller.)
 *
 * Why batches: a message that wakes the worker costs about as much as compressing a 4 KiB
 * block (microseconds, tens of them on a busy machine). Blocks are therefore copied into a
 * batch buffer and sent BATCH_TARGET_BYTES at a time (at most MAX_BLOCKS_PER_BATCH blocks); the
 * batch buffers come back with the replies and are reused.
 *
 * Why the API is synchronous: SstFileWriter.put/finish are synchronous and callers rely on that.
 * The pipeline never needs the event loop: it takes replies with receiveMessageOnPort, and when
 * it must wait (too many batches in flight, or flush) it blocks in Atomics.wait on a counter the
 * worker bumps after every reply (see compressionWorker.ts).
 *
 * Contract:
 * - `submit(contents, tag)` copies `contents` (the caller may reuse its buffer at once) and
 *   queues it. Stored blocks are delivered to the `deliver` callback passed to the constructor,
 *   whole batches at a time and strictly in submission order, each block with its tag; delivery
 *   happens inside `submit` or `flush`, never later or on another thread.
 * - At most MAX_BATCHES_IN_FLIGHT batches (PipelineLimits) are with the worker; `submit` blocks
 *   while that many are outstanding. Memory is therefore bounded by MAX_BATCHES_IN_FLIGHT
 *   batches of input and as much output, plus the batch being filled and MAX_SPARE_BUFFERS
 *   reusable buffers: about 11 MiB (a block larger than a batch travels alone, in a buffer of
 *   its own size).
 * - `flush()` returns once every submitted block was delivered. `close()` drops whatever is
 *   still in flight (an aborted table) and releases the channel; it is idempotent.
 * - A worker failure, a reply that reports an error, or no reply within STALL_LIMIT_MS throws
 *   IngestError('IO'); an exception from `deliver` propagates. After either the pipeline is
 *   unusable and the caller must close it.
 * - The output is exactly what storeBlock() would give inline (same function, same settings),
 *   so a table written through the pipeline is byte-identical to one written without it.
 *
 * One worker serves every pipeline of a thread (each pipeline has its own MessageChannel). It is
 * started on first use, unref'd so it never keeps the process alive, stopped after
 * IDLE_WORKER_MS without a pipeline, and restarted if it died.
 */
import { MessageChannel, MessagePort, Worker, receiveMessageOnPort } from 'worker_threads';
import { startModuleWorker } from '../util/workerBootstrap';
import { IngestError, assert } from '../util/errors';
import { MAX_BLOCK_BYTES } from './blockBuilder';
import { BLOCK_TRAILER_BYTES } from '../sstable/checksum';
import {
  AttachMessage,
  BatchReply,
  BatchRequest,
  CONTROL_COMPLETIONS,
  CONTROL_SLOTS,
  CONTROL_STATE,
  CompressionWorkerData,
  WORKER_FAILED,
  WORKER_READY,
} from './compressionWorker';
import type { BlockStorageSettings } from './storedBlock';

/** A batch is sent once it holds this many bytes of block contents (see "Why batches"). */
export const BATCH_TARGET_BYTES = 1024 * 1024;
/** ... or this many blocks, which bounds the per-batch arrays when blocks are tiny. */
export const MAX_BLOCKS_PER_BATCH = 1024;
/**
 * Batches with the worker at once; `submit` waits beyond this. Enough to keep the worker busy
 * while the caller fills the next batch and to ride out short descheduling; deeper queues do
 * not add throughput (the slower thread sets the pace) but lengthen the wait in flush(),
 * which must let the worker drain the queue.
 */
export const MAX_BATCHES_IN_FLIGHT = 4;
/** Returned batch buffers kept for reuse; more would only hold memory. */
const MAX_SPARE_BUFFERS = 2;
/** A wait for a reply longer than this means the worker is gone or wedged. */
export const STALL_LIMIT_MS = 60_000;
/** Atomics.wait slice, so a worker that died without a word is noticed by STALL_LIMIT_MS. */
const WAIT_SLICE_MS = 1000;
/** A worker with no pipeline for this long is stopped (a new one starts in tens of ms). */
const IDLE_WORKER_MS = 5000;

/** Batching limits (the defaults above; tests shrink them to exercise batching and backpressure). */
export interface PipelineLimits {
  batchTargetBytes: number;
  maxBlocksPerBatch: number;
  maxBatchesInFlight: number;
}

const DEFAULT_LIMITS: PipelineLimits = {
  batchTargetBytes: BATCH_TARGET_BYTES,
  maxBlocksPerBatch: MAX_BLOCKS_PER_BATCH,
  maxBatchesInFlight: MAX_BATCHES_IN_FLIGHT,
};

/** Stored blocks of one batch, as delivered. */
export interface StoredBatch<Tag> {
  /** For each block in order: stored bytes ‖ 5-byte trailer, back to back. */
  bytes: Buffer;
  /** Stored size of each block, trailer excluded. */
  storedSizes: Int32Array;
  /** The tags given to submit(), in the same order. */
  tags: Tag[];
}

interface InFlightBatch<Tag> {
  tags: Tag[];
  /** Contents plus trailers: what the batch will take at most in the file. */
  maxStoredBytes: number;
}

interface SharedWorker {
  worker: Worker;
  control: Int32Array;
  /** Pipelines not yet closed. */
  pipelines: number;
  idleTimer: NodeJS.Timeout | null;
}

let sharedWorker: SharedWorker | null = null;

/** This thread's compression worker, started (or restarted after a failure) on demand. */
function acquireCompressionWorker(): SharedWorker {
  const current = sharedWorker;
  if (current !== null && Atomics.load(current.control, CONTROL_STATE) !== WORKER_FAILED) {
    if (current.idleTimer !== null) clearTimeout(current.idleTimer);
    current.idleTimer = null;
    current.pipelines++;
    return current;
  }
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * Int32Array.BYTES_PER_ELEMENT));
  const data: CompressionWorkerData = { control: control.buffer as SharedArrayBuffer };
  const worker = startModuleWorker(__filename, 'compressionWorker', data);
  worker.unref();
  const handle: SharedWorker = { worker, control, pipelines: 1, idleTimer: null };
  // Seen only when the event loop runs; a pipeline blocked in a wait relies on STALL_LIMIT_MS.
  const failed = (): void => {
    Atomics.store(control, CONTROL_STATE, WORKER_FAILED);
    Atomics.notify(control, CONTROL_COMPLETIONS);
    if (sharedWorker === handle) sharedWorker = null;
  };
  worker.on('error', failed);
  worker.on('exit', failed);
  sharedWorker = handle;
  return handle;
}

/** Called once per closed pipeline; stops the worker once it has been idle for a while. */
function releaseCompressionWorker(handle: SharedWorker): void {
  handle.pipelines--;
  if (handle.pipelines > 0 || handle.idleTimer !== null) return;
  handle.idleTimer = setTimeout(() => {
    handle.idleTimer = null;
    if (handle.pipelines > 0) return;
    if (sharedWorker === handle) sharedWorker = null;
    void handle.worker.terminate();
  }, IDLE_WORKER_MS);
  handle.idleTimer.unref();
}

export class BlockCompressionPipeline<Tag> {
  private readonly worker: SharedWorker;
  private readonly control: Int32Array;
  private readonly port: MessagePort;
  /** The batch being filled: contents back to back in `batch[0, batchBytes)`. */
  private batch: Buffer;
  private batchBytes = 0;
  private batchEnds: number[] = [];
  private batchTags: Tag[] = [];
  private readonly limits: PipelineLimits;
  /** Batch buffers returned by the worker, ready for reuse (at most MAX_SPARE_BUFFERS). */
  private readonly spareBuffers: ArrayBuffer[] = [];
  private readonly inFlight: InFlightBatch<Tag>[] = [];
  private inFlightMaxStoredBytes = 0;
  private closed = false;
  private broken = false;

  constructor(
    settings: BlockStorageSettings,
    private readonly deliver: (batch: StoredBatch<Tag>) => void,
    limits: Partial<PipelineLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    const { batchTargetBytes, maxBlocksPerBatch, maxBatchesInFlight } = this.limits;
    assert(
      Number.isInteger(batchTargetBytes) && batchTargetBytes >= 1 && batchTargetBytes <= MAX_BLOCK_BYTES,
      'batchTargetBytes out of range',
    );
    assert(Number.isInteger(maxBlocksPerBatch) && maxBlocksPerBatch >= 1, 'maxBlocksPerBatch must be a positive integer');
    assert(Number.isInteger(maxBatchesInFlight) && maxBatchesInFlight >= 1, 'maxBatchesInFlight must be a positive integer');
    const shared = acquireCompressionWorker();
    this.worker = shared;
    this.control = shared.control;
    const channel = new MessageChannel();
    this.port = channel.port1;
    // Only the fields the worker needs (callers may pass a larger options object).
    const workerSettings: BlockStorageSettings = {
      compression: settings.compression,
      formatVersion: settings.formatVersion,
      checksumType: settings.checksumType,
    };
    const attach: AttachMessage = { port: channel.port2, settings: workerSettings };
    shared.worker.postMessage(attach, [channel.port2]);
    this.batch = Buffer.from(new ArrayBuffer(batchTargetBytes));
  }

  /** Queues a copy of `contents`; may deliver earlier batches, and may wait for the worker. */
  submit(contents: Buffer, tag: Tag): void {
    this.checkUsable();
    if (contents.length > MAX_BLOCK_BYTES) assert(false, `block of ${contents.length} bytes exceeds the block limit`);
    if (this.batchBytes > 0 && this.batchBytes + contents.length > this.batch.length) this.guard(() => this.sendBatch());
    if (contents.length > this.batch.length) this.batch = Buffer.from(new ArrayBuffer(contents.length)); // batch is empty here
    this.batch.set(contents, this.batchBytes);
    this.batchBytes += contents.length;
    this.batchEnds.push(this.batchBytes);
    this.batchTags.push(tag);
    if (this.batchBytes >= this.limits.batchTargetBytes || this.batchEnds.length >= this.limits.maxBlocksPerBatch)
      this.guard(() => this.sendBatch());
  }

  /** Upper bound of the file bytes of every block submitted but not yet delivered. */
  pendingStoredBytes(): number {
    return this.inFlightMaxStoredBytes + this.batchBytes + this.batchEnds.length * BLOCK_TRAILER_BYTES;
  }

  /** Sends the partial batch and delivers everything submitted so far. */
  flush(): void {
    this.checkUsable();
    this.guard(() => {
      if (this.batchEnds.length > 0) this.sendBatch();
      while (this.inFlight.length > 0) this.deliverNext(true);
    });
  }

  /** Releases the channel; batches still in flight are dropped. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.port.close();
    releaseCompressionWorker(this.worker);
    this.spareBuffers.length = 0;
    this.inFlight.length = 0;
  }

  private checkUsable(): void {
    assert(!this.closed, 'compression pipeline used after close()');
    assert(!this.broken, 'compression pipeline used after a failure');
  }

  /** Runs `f`, marking the pipeline broken if it throws (its state may be half-updated). */
  private guard(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.broken = true;
      throw e;
    }
  }

  private sendBatch(): void {
    while (this.inFlight.length >= this.limits.maxBatchesInFlight) this.deliverNext(true);
    // Write out whatever is done before adding more; keeps memory and latency low.
    while (this.inFlight.length > 0 && this.deliverNext(false));
    const request: BatchRequest = { input: this.batch.buffer as ArrayBuffer, blockEnds: Int32Array.from(this.batchEnds) };
    const maxStoredBytes = this.batchBytes + this.batchEnds.length * BLOCK_TRAILER_BYTES;
    this.port.postMessage(request, [request.input]);
    this.inFlight.push({ tags: this.batchTags, maxStoredBytes });
    this.inFlightMaxStoredBytes += maxStoredBytes;
    const spare = this.spareBuffers.pop();
    this.batch = Buffer.from(spare ?? new ArrayBuffer(this.limits.batchTargetBytes));
    this.batchBytes = 0;
    this.batchEnds = [];
    this.batchTags = [];
  }

  /** Delivers the oldest batch in flight; if it is not back yet, waits (`wait`) or returns false. */
  private deliverNext(wait: boolean): boolean {
    let reply: BatchReply | undefined;
    for (let deadline = -1; ;) {
      // Read the counter before looking, so a reply posted in between ends the wait at once.
      const completions = Atomics.load(this.control, CONTROL_COMPLETIONS);
      const m = receiveMessageOnPort(this.port);
      if (m !== undefined) {
        reply = m.message as BatchReply;
        break;
      }
      if (!wait) return false;
      if (deadline < 0) deadline = Date.now() + STALL_LIMIT_MS;
      if (Atomics.load(this.control, CONTROL_STATE) === WORKER_FAILED) {
        throw new IngestError('IO', 'the block compression worker stopped; the table cannot be completed');
      }
      if (Date.now() > deadline) {
        const state = Atomics.load(this.control, CONTROL_STATE) === WORKER_READY ? 'running' : 'not started';
        throw new IngestError('IO', `the block compression worker (${state}) did not answer within ${STALL_LIMIT_MS} ms`);
      }
      Atomics.wait(this.control, CONTROL_COMPLETIONS, completions, WAIT_SLICE_MS);
    }
    const batch = this.inFlight.shift();
    assert(batch !== undefined, 'a compression reply arrived with no batch in flight');
    this.inFlightMaxStoredBytes -= batch.maxStoredBytes;
    if ('error' in reply) throw new IngestError('IO', `block compression failed: ${reply.error}`);
    if (reply.storedSizes.length !== batch.tags.length)
      assert(false, `compression reply has ${reply.storedSizes.length} blocks, the batch ${batch.tags.length}`);
    if (reply.input.byteLength === this.limits.batchTargetBytes && this.spareBuffers.length < MAX_SPARE_BUFFERS)
      this.spareBuffers.push(reply.input);
    this.deliver({ bytes: Buffer.from(reply.output, 0, reply.outputBytes), storedSizes: reply.storedSizes, tags: batch.tags });
    return true;
  }
}
