/**
 * Compression worker: a thread that turns batches of finished data blocks into their stored
 * form (the table's compression in RocksDB's framing when it pays, plus the 5-byte trailer) for
 * BlockCompressionPipeline, so the thread that builds blocks does not spend its time in codecs and checksums.
 *
 * Protocol (buffers are transferred, never copied):
 *   parent → worker, on parentPort: AttachMessage { port, settings }, one per pipeline. The
 *     worker then serves that pipeline's batches, arriving on `port`, with `settings`, until the
 *     pipeline closes the port.
 *   pipeline → worker, on its port: BatchRequest { input, blockEnds }: data blocks back to
 *     back in `input`, block i ending at blockEnds[i].
 *   worker → pipeline, on its port: BatchReply { input, output, outputBytes, storedSizes } with,
 *     for each block in order, `stored bytes ‖ trailer` back to back in output[0, outputBytes)
 *     (storedSizes[i] excludes the trailer); `input` comes back so the pipeline can reuse it.
 *     Or { error } if a block could not be stored.
 * The pipeline does not run its event loop while it waits for replies (its API is synchronous),
 * so after posting every reply the worker increments control[CONTROL_COMPLETIONS] and wakes it
 * with Atomics.notify; the pipeline then takes the reply with receiveMessageOnPort. Once the
 * module is loaded the worker sets control[CONTROL_STATE] to WORKER_READY.
 *
 * Replies on one port come in request order (one port, one thread, FIFO), which is what lets
 * the pipeline assign file offsets in block order.
 */
import { MessagePort, parentPort, workerData } from 'worker_threads';
import { BLOCK_TRAILER_BYTES } from '../sstable/checksum';
import { BlockStorageSettings, storeBlock, writeBlockTrailer } from './storedBlock';

/** Slots of the shared Int32Array `control` (workerData.control). */
export const CONTROL_COMPLETIONS = 0;
export const CONTROL_STATE = 1;
export const CONTROL_SLOTS = 2;
/** Values of control[CONTROL_STATE]. */
export const WORKER_STARTING = 0;
export const WORKER_READY = 1;
export const WORKER_FAILED = 2;

export interface CompressionWorkerData {
  /** SharedArrayBuffer of CONTROL_SLOTS int32 slots. */
  control: SharedArrayBuffer;
}

export interface AttachMessage {
  port: MessagePort;
  settings: BlockStorageSettings;
}

export interface BatchRequest {
  input: ArrayBuffer;
  blockEnds: Int32Array;
}

export type BatchReply = { input: ArrayBuffer; output: ArrayBuffer; outputBytes: number; storedSizes: Int32Array } | { error: string };

/**
 * Stores every block of a batch into output[0, outputBytes). The output buffer has room for the
 * input plus one trailer per block, which always suffices (a block is stored compressed only if
 * that is smaller); it is not trimmed, which would copy it.
 */
export function storeBatch(
  input: Buffer,
  blockEnds: Int32Array,
  settings: BlockStorageSettings,
): { output: ArrayBuffer; outputBytes: number; storedSizes: Int32Array } {
  const blocks = blockEnds.length;
  const inputBytes = blocks === 0 ? 0 : blockEnds[blocks - 1];
  const output = new ArrayBuffer(inputBytes + blocks * BLOCK_TRAILER_BYTES);
  const out = Buffer.from(output);
  const storedSizes = new Int32Array(blocks);
  let start = 0;
  let pos = 0;
  for (let i = 0; i < blocks; i++) {
    const end = blockEnds[i];
    const stored = storeBlock(input.subarray(start, end), true, settings);
    out.set(stored.bytes, pos);
    pos = writeBlockTrailer(out, pos + stored.bytes.length, stored.type, stored.checksum);
    storedSizes[i] = stored.bytes.length;
    start = end;
  }
  return { output, outputBytes: pos, storedSizes };
}

function serve(control: Int32Array, port: MessagePort, settings: BlockStorageSettings): void {
  port.on('message', (request: BatchRequest) => {
    let reply: BatchReply;
    let transfer: ArrayBuffer[] = [];
    try {
      const { output, outputBytes, storedSizes } = storeBatch(Buffer.from(request.input), request.blockEnds, settings);
      reply = { input: request.input, output, outputBytes, storedSizes };
      transfer = [request.input, output];
    } catch (e) {
      reply = { error: (e as Error).message };
    }
    port.postMessage(reply, transfer);
    Atomics.add(control, CONTROL_COMPLETIONS, 1);
    Atomics.notify(control, CONTROL_COMPLETIONS);
  });
  port.on('close', () => port.removeAllListeners());
}

if (parentPort !== null && workerData !== null && typeof workerData === 'object' && 'control' in workerData) {
  const control = new Int32Array((workerData as CompressionWorkerData).control);
  parentPort.on('message', (m: AttachMessage) => serve(control, m.port, m.settings));
  Atomics.store(control, CONTROL_STATE, WORKER_READY);
  Atomics.notify(control, CONTROL_COMPLETIONS);
}
