/**
 * The import's native functions (native/ingestExports.c, in the addon that src/util/nativeAddon.ts
 * loads), or null when the addon is not built or is switched off: the CSV fast path into the
 * sort buffer (native/rowParse.c), the sort buffer's sort and its gather into a run file
 * (native/rowSort.c), and the merge of runs into data blocks (native/mergeBlocks.c).
 *
 * Why native code: these are the import's per-row loops, run once per spill or per merge, too
 * few times for V8's optimizing compiler to take over (the C files say what each saved); in C
 * they are a few memcpys and compares per row. Each has a JavaScript path that gives the same result, used
 * when `nativeImport` is null, and the tests run both against each other
 * (test/ingest/nativeRowParse.test.ts, test/ingest/sortAndKeys.test.ts,
 * test/ingest/sort/nativeMerge.test.ts, test/ingest/sort/nativeDataBlock.test.ts).
 *
 * Contract: see native/ingestExports.c. Arguments of the wrong type or out of range throw an
 * Error with code INVALID_ARGUMENT before anything is written.
 */
import { nativeFace } from '../util/nativeAddon';

export interface NativeImport {
  /**
   * SortBuffer.sort() natively (native/rowSort.c): sets order[0, count) to the entries in key
   * order, equal keys in entry order, using the scratch columns given and nothing else.
   */
  sortEntries(
    arena: Uint8Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    count: number,
    order: Uint32Array,
    high: Uint32Array,
    low: Uint32Array,
    lengthClass: Uint8Array,
    orderScratch: Uint32Array,
    highScratch: Uint32Array,
    lowScratch: Uint32Array,
    classScratch: Uint8Array,
  ): void;
  /**
   * Writes run-file entries order[state[0]], ... at out[state[1]..] (src/ingest/sort/runFile.ts),
   * stopping before `to`, before an entry that would not end by outEnd (with the longest header)
   * and before one that would start at or past stopAtFill; leaves the next index in state[0] and
   * the fill in state[1].
   */
  gatherRun(
    arena: Uint8Array,
    order: Uint32Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    valueLength: Uint32Array,
    source: Uint32Array,
    line: Float64Array,
    to: number,
    out: Uint8Array,
    outEnd: number,
    stopAtFill: number,
    state: Uint32Array,
  ): void;
  /**
   * The CSV fast path for a one-column key and raw or csv values (native/rowParse.c): from
   * state[0] (the input position; state[1] its line), takes every record of src[.., end) that
   * starts before stopAt, is simple (no quote, not empty, not a comment, fieldCount fields, a key
   * that parses; csv: no CR inside) and fits the sort buffer, encoding each at arena[state[3]..]
   * as entry state[2]; leaves the four where it stopped and returns the records taken. layout:
   * [delimiter, quote, comment, fieldCount, keyField, keyType (0 bytes, 1 int64, 2 uint64),
   * valueDelimiter, fixedBytes, source, valueFormat (0 raw, 1 csv)]; limits: [arenaStart,
   * memoryLimitBytes, bytesPerEntry].
   */
  parseRows(
    src: Uint8Array,
    end: number,
    stopAt: number,
    layout: Int32Array,
    valueFields: Int32Array,
    arena: Uint8Array,
    limits: Float64Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    valueLength: Uint32Array,
    source: Uint32Array,
    line: Float64Array,
    state: Float64Array,
  ): number;
  /** Bytes of a merge context for `runs` runs (native/mergeBlocks.c; driven by src/ingest/sort/nativeMerge.ts). */
  mergeContextBytes(runs: number): number;
  /**
   * Resets `ctx` (8-byte aligned, mergeContextBytes(runs) long) for a merge of `runs` runs into
   * data blocks cut by these rules, hashing user keys for a FastLocalBloom filter when `hashKeys`,
   * over keys in [low, high) (null: unbounded). low / high must stay alive while ctx is used.
   */
  mergeInit(
    ctx: Uint8Array,
    runs: number,
    blockSizeBytes: number,
    deviationLimitBytes: number,
    restartInterval: number,
    hashKeys: boolean,
    targetFileSizeBytes: number,
    low: Uint8Array | null,
    high: Uint8Array | null,
  ): void;
  /** Lends run i's read buffer; its valid bytes are [pos, limit). It must stay alive until replaced. */
  mergeSetReader(ctx: Uint8Array, i: number, buf: Uint8Array, pos: number, limit: number, eof: boolean): void;
  /** Lends the outputs: the block, its restart offsets, the key hashes, three internal-key slots (keys / 3 each). */
  mergeSetOutput(
    ctx: Uint8Array,
    block: Uint8Array,
    restarts: Uint32Array,
    hashLo: Uint32Array,
    hashHi: Uint32Array,
    keys: Uint8Array,
  ): void;
  /** Runs the merge until it must stop; returns why (Stop in src/ingest/sort/nativeMerge.ts), details in io. */
  mergeBlocks(ctx: Uint8Array, io: Float64Array): number;
}

const loaded = nativeFace<NativeImport>({
  sortEntries: true,
  gatherRun: true,
  parseRows: true,
  mergeContextBytes: true,
  mergeInit: true,
  mergeSetReader: true,
  mergeSetOutput: true,
  mergeBlocks: true,
});

/** The import's native functions, or null (then the import runs its JavaScript paths). */
export const nativeImport: NativeImport | null = loaded.face;

/** Why they are or are not in use ("loaded <file>" when they are). */
export const nativeImportStatus: string = loaded.status;
