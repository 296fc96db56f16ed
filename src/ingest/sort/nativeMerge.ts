/**
 * The merge of sorted runs into SSTs with its per-row work in native code (native/mergeBlocks.c):
 * the loser tree over the runs, duplicate detection, the data blocks' encoding and the filter's
 * key hashes run in C, one call per data block; this driver refills the runs' buffers, records
 * duplicates, cuts files, and hands each finished block to the table builder
 * (TableBuilder.addEncodedDataBlock), which compresses, writes and indexes it as it does its own.
 *
 * Why: the JavaScript merge (mergeToSsts.ts) spent about 0.35 µs per row and worker in the loop,
 * the block builder, the key copies and the XXPH3 hash (docs/import-benchmark-history.md, "Ninth round"); the
 * native loop is a few memcpys and compares per row.
 *
 * Contract: for the same runs, policy, range and options, the files are byte-identical to the
 * JavaScript merge's and the MergeResult is equal (test/ingest/sort/nativeMerge.test.ts compares
 * both, file by file). `nativeMergeOptions` says when this path applies: the native module is
 * built (and SST_INGEST_NATIVE_MERGE is not 0), the policy is "first" or "error" ("last" holds
 * values back, which the native loop does not do), no origins side files are written, blocks
 * are stored inline, and the filter, if any, is FastLocalBloom (format_version 5).
 *
 * Memory: one read buffer per run (as the JavaScript merge), the block output (twice the block
 * size to start, at most 1 MiB), hash and restart arrays for blockSize/4 entries (at most 1,100),
 * three key slots; each grows,
 * doubling, only when an entry does not fit (NEED_ROOM), up to the largest entry of the runs.
 */
import { IngestError, assert } from '../../util/errors';
import { nativeImport, NativeImport } from '../nativeImport';
import { millibitsPerKey } from '../../sstable/bloomFilter';
import { EncodedDataBlock, TableBuilderOptions, blockDeviationLimitBytes, resolveTableBuilderOptions } from '../../sstwriter/tableBuilder';
import { sstFileTableOptions } from '../../sstwriter/sstFileWriter';
import { FIRST_ENTRY_OFFSET, RunInfo, RunReader } from './runFile';
import { SstSetWriter } from './sstSetWriter';
import {
  DuplicatePolicy,
  MAX_DUPLICATE_EXAMPLES,
  MergeRange,
  MergeResult,
  MergeResumeHooks,
  PROGRESS_EVERY_ENTRIES,
  checkpointAt,
  punchingBehindCheckpoints,
  readRegionsFor,
  startingResult,
} from './mergeResult';

/** Slots of the shared Float64Array (MIO_* in native/mergeBlocks.h, same order). */
const enum Io {
  Detail,
  NeedBytes,
  FileBaseBytes,
  RowsMerged,
  RowsWritten,
  Duplicates,
  BlockBytes,
  BlockEntries,
  BlockRawKeyBytes,
  BlockRawValueBytes,
  FirstKeyBytes,
  LastKeyBytes,
  NextKeyBytes,
  DupSource,
  DupLine,
  FirstSource,
  FirstLine,
  ReaderSeen,
  Writing,
  ReportDuplicates,
  ReaderPos,
  Slots,
}

/** Why mergeBlocks stopped (MERGE_* in native/mergeBlocks.h). */
const enum Stop {
  End = 0,
  Block = 1,
  Cut = 2,
  NeedData = 3,
  Duplicate = 4,
  NeedRoom = 5,
  ReaderDone = 6,
  Truncated = -1,
  Corrupt = -2,
  KeyOrder = -3,
}

/** Which output NEED_ROOM asks to grow (ROOM_* in native/mergeBlocks.h). */
const enum Room {
  Block = 1,
  Entries = 2,
  Keys = 3,
}

const TRAILER_BYTES = 8;
/** The smallest entry a block can hold (three one-byte varints and one unshared key byte): bounds entries per block. */
const MIN_ENTRY_BYTES = 4;
const INITIAL_KEY_SLOT_BYTES = 256;
/** Initial bounds of the block output and of its entries, hashes and restarts (grown on demand). */
const INITIAL_MAX_BLOCK_BYTES = 1 << 20;
const INITIAL_MAX_ENTRIES = 1100;

/**
 * The table options `out` writes its files with, when this merge can run natively (see the module
 * comment), else null; SST_INGEST_NATIVE_MERGE=0 turns the native merge off.
 */
export function nativeMergeOptions(policy: DuplicatePolicy, out: SstSetWriter): TableBuilderOptions | null {
  if (nativeImport === null || process.env.SST_INGEST_NATIVE_MERGE === '0' || policy === 'last' || out.writesOrigins) return null;
  const o = resolveTableBuilderOptions(sstFileTableOptions(out.fileOptions));
  if (o.backgroundCompression) return null;
  return millibitsPerKey(o.bloomBitsPerKey) === 0 || o.formatVersion >= 5 ? o : null;
}

export function canMergeNatively(policy: DuplicatePolicy, out: SstSetWriter): boolean {
  return nativeMergeOptions(policy, out) !== null;
}

/** The native merge's outputs, grown on NEED_ROOM. */
class Outputs {
  block: Buffer;
  restarts: Uint32Array;
  hashLo: Uint32Array;
  hashHi: Uint32Array;
  keys: Buffer;
  slotBytes = INITIAL_KEY_SLOT_BYTES;

  constructor(blockSizeBytes: number) {
    // Enough for a default 4 KiB block of the smallest entries; larger blocks grow these on NEED_ROOM.
    const entries = Math.min(Math.ceil(blockSizeBytes / MIN_ENTRY_BYTES) + 2, INITIAL_MAX_ENTRIES);
    this.block = Buffer.allocUnsafe(Math.min(2 * blockSizeBytes, INITIAL_MAX_BLOCK_BYTES) + 64);
    this.restarts = new Uint32Array(entries + 1);
    this.hashLo = new Uint32Array(entries);
    this.hashHi = new Uint32Array(entries);
    this.keys = Buffer.allocUnsafe(3 * this.slotBytes);
  }

  /** Grows the output NEED_ROOM named to at least `need`, keeping its contents. */
  grow(room: number, need: number): void {
    if (room === Room.Block) {
      const bigger = Buffer.allocUnsafe(Math.max(need, 2 * this.block.length));
      this.block.copy(bigger);
      this.block = bigger;
    } else if (room === Room.Entries) {
      const entries = Math.max(need, 2 * this.hashLo.length);
      this.restarts = grownCopy(this.restarts, entries + 1);
      this.hashLo = grownCopy(this.hashLo, entries);
      this.hashHi = grownCopy(this.hashHi, entries);
    } else if (room === Room.Keys) {
      const slot = Math.max(need, 2 * this.slotBytes);
      const keys = Buffer.allocUnsafe(3 * slot);
      for (let i = 0; i < 3; i++) this.keys.copy(keys, i * slot, i * this.slotBytes, (i + 1) * this.slotBytes);
      this.keys = keys;
      this.slotBytes = slot;
    } else {
      assert(false, `mergeBlocks asked for room of kind ${room}`);
    }
  }

  lend(codec: NativeImport, ctx: Uint8Array): void {
    codec.mergeSetOutput(ctx, this.block, this.restarts, this.hashLo, this.hashHi, this.keys);
  }

  /** Key slot i (0 first, 1 last, 2 next) holding `bytes`. */
  key(i: number, bytes: number): Buffer {
    return this.keys.subarray(i * this.slotBytes, i * this.slotBytes + bytes);
  }
}

function grownCopy(a: Uint32Array, length: number): Uint32Array {
  const b = new Uint32Array(length);
  b.set(a);
  return b;
}

/** One merge's native state, its run readers and outputs. */
class NativeMergeRun {
  readonly codec: NativeImport;
  readonly ctx: Uint8Array;
  readonly io = new Float64Array(Io.Slots);
  readonly outputs: Outputs;
  readonly block: EncodedDataBlock;

  constructor(
    readonly readers: RunReader[],
    readonly out: SstSetWriter,
    o: TableBuilderOptions,
    range: MergeRange | undefined,
  ) {
    const codec = nativeImport as NativeImport;
    this.codec = codec;
    // An ArrayBuffer of its own: its backing store is aligned for the C struct.
    this.ctx = new Uint8Array(new ArrayBuffer(codec.mergeContextBytes(readers.length)));
    codec.mergeInit(
      this.ctx,
      readers.length,
      o.blockSizeBytes,
      blockDeviationLimitBytes(o),
      o.blockRestartInterval,
      millibitsPerKey(o.bloomBitsPerKey) > 0,
      out.targetFileBytes,
      range?.low ?? null,
      range?.high ?? null,
    );
    readers.forEach((r, i) => codec.mergeSetReader(this.ctx, i, r.buf, 0, r.validBytes, r.atEof));
    this.outputs = new Outputs(o.blockSizeBytes);
    this.outputs.lend(codec, this.ctx);
    this.io[Io.Writing] = 1;
    this.io[Io.ReportDuplicates] = 1;
    const empty = new Uint8Array(0);
    this.block = {
      contents: Buffer.alloc(0),
      firstKey: empty,
      lastKey: empty,
      nextKey: null,
      entries: 0,
      rawKeyBytes: 0,
      rawValueBytes: 0,
      hashLo: this.outputs.hashLo,
      hashHi: this.outputs.hashHi,
    };
  }

  /** Hands the block mergeBlocks finished (if any) to the open file; `hasNext`: slot 2 starts the next block. */
  handOverBlock(hasNext: boolean): void {
    const io = this.io;
    const bytes = io[Io.BlockBytes];
    if (bytes === 0 || io[Io.Writing] === 0) return;
    const o = this.outputs;
    const b = this.block;
    b.contents = o.block.subarray(0, bytes);
    b.firstKey = o.key(0, io[Io.FirstKeyBytes]);
    b.lastKey = o.key(1, io[Io.LastKeyBytes]);
    b.nextKey = hasNext ? o.key(2, io[Io.NextKeyBytes]) : null;
    b.entries = io[Io.BlockEntries];
    b.rawKeyBytes = io[Io.BlockRawKeyBytes];
    b.rawValueBytes = io[Io.BlockRawValueBytes];
    b.hashLo = o.hashLo;
    b.hashHi = o.hashHi;
    this.out.addEncodedBlock(b);
  }

  /** Refills run i's buffer from where its next entry starts, and lends it again. */
  refill(i: number): void {
    const r = this.readers[i];
    r.refillFrom(this.io[Io.ReaderPos], this.io[Io.NeedBytes]);
    this.codec.mergeSetReader(this.ctx, i, r.buf, 0, r.validBytes, r.atEof);
  }

  /** The error for a failing stop code. */
  failure(code: number): IngestError {
    const i = this.io[Io.Detail];
    const run = this.readers[i]?.info.path ?? `run ${i}`;
    const entry = this.io[Io.ReaderSeen] + 1;
    if (code === Stop.Truncated) return new IngestError('IO', `run file ${run} is truncated inside entry ${entry}`);
    if (code === Stop.Corrupt) return new IngestError('IO', `run file ${run} has a malformed entry header at entry ${entry}`);
    if (code === Stop.KeyOrder)
      return new IngestError(
        'KEY_ORDER',
        `run file ${run} is not sorted: its entry ${this.io[Io.ReaderSeen]} comes before the previous key`,
      );
    return new IngestError('IO', `the native merge stopped with code ${code}`);
  }
}

/** The merge, natively; `options` are nativeMergeOptions(policy, out), which must not be null. */
export function mergeRunsIntoSstsNatively(
  options: TableBuilderOptions,
  runs: readonly RunInfo[],
  policy: DuplicatePolicy,
  out: SstSetWriter,
  readBufferBytes: number,
  onProgress?: (rowsMerged: number) => void,
  range?: MergeRange,
  resume?: MergeResumeHooks,
): MergeResult {
  if (nativeImport === null || options.backgroundCompression)
    assert(false, 'mergeRunsIntoSstsNatively needs the native codec and inline blocks');
  const readers: RunReader[] = [];
  try {
    // Without a range this merge is the runs' only reader: each run is deleted once read.
    const regions = readRegionsFor(runs, range, resume);
    runs.forEach((r, i) =>
      readers.push(new RunReader(r, readBufferBytes, range?.startOffsets[i] ?? FIRST_ENTRY_OFFSET, range === undefined, regions[i])),
    );
    const hooks = resume === undefined ? undefined : punchingBehindCheckpoints(runs, () => readers, resume);
    const m = new NativeMergeRun(readers, out, options, range);
    const result = startingResult(resume);
    const base = { ...result };
    const sync = (): void => {
      result.rowsMerged = base.rowsMerged + m.io[Io.RowsMerged];
      result.rowsWritten = base.rowsWritten + m.io[Io.RowsWritten];
      result.duplicateCount = base.duplicateCount + m.io[Io.Duplicates];
    };
    // Under "first" and "error" a file is cut before a new key's first row: no duplicate of a later key is counted yet.
    if (hooks !== undefined) out.onFileFinished = (f) => hooks.onFileFinished(f, checkpointAt(f, result, 0));
    try {
      runLoop(m, policy, result, sync, onProgress);
    } finally {
      out.onFileFinished = null;
    }
    if (m.io[Io.Writing] === 0) result.rowsWritten = 0;
    onProgress?.(result.rowsMerged);
    return result;
  } finally {
    for (const r of readers) r.close();
  }
}

/** Calls mergeBlocks until the end, answering each stop. */
function runLoop(
  m: NativeMergeRun,
  policy: DuplicatePolicy,
  result: MergeResult,
  sync: () => void,
  onProgress?: (rowsMerged: number) => void,
): void {
  const io = m.io;
  let reportedAt = 0;
  for (;;) {
    io[Io.FileBaseBytes] = m.out.openFileSizeBytes();
    const code = m.codec.mergeBlocks(m.ctx, io);
    sync();
    m.handOverBlock(code === Stop.Block);
    if (code === Stop.End) return;
    if (code === Stop.Cut) {
      m.out.cutFile();
    } else if (code === Stop.NeedData) {
      m.refill(io[Io.Detail]);
    } else if (code === Stop.ReaderDone) {
      m.readers[io[Io.Detail]].reachedEnd(io[Io.ReaderSeen]);
    } else if (code === Stop.Duplicate) {
      recordDuplicate(m, policy, result);
    } else if (code === Stop.NeedRoom) {
      m.outputs.grow(io[Io.Detail], io[Io.NeedBytes]);
      m.outputs.lend(m.codec, m.ctx);
    } else if (code !== Stop.Block) {
      throw m.failure(code);
    }
    if (result.rowsMerged - reportedAt >= PROGRESS_EVERY_ENTRIES) {
      reportedAt = result.rowsMerged;
      onProgress?.(reportedAt);
    }
  }
}

function recordDuplicate(m: NativeMergeRun, policy: DuplicatePolicy, result: MergeResult): void {
  const io = m.io;
  if (policy === 'error') io[Io.Writing] = 0;
  if (result.duplicates.length < MAX_DUPLICATE_EXAMPLES) {
    result.duplicates.push({
      key: Buffer.from(m.outputs.key(1, io[Io.LastKeyBytes] - TRAILER_BYTES)),
      first: { source: io[Io.FirstSource], line: io[Io.FirstLine] },
      duplicate: { source: io[Io.DupSource], line: io[Io.DupLine] },
    });
  }
  if (result.duplicates.length >= MAX_DUPLICATE_EXAMPLES) io[Io.ReportDuplicates] = 0;
}
