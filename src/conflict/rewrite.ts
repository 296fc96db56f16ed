/**
 * The policies' rewrite: new SST files without the conflicting keys (skip), so that ingesting
 * them changes no live value, and without the rows that hold the live value already (every
 * policy, when the report carries its unchanged runs, unchangedRuns.ts), so that a load that
 * changes nothing ingests nothing.
 *
 * Per file: one holding no conflicting key and only unchanged rows is left out whole, untouched
 * (unchangedLeftOut); one holding a conflicting key, or at least UNCHANGED_REWRITE_MIN_FRACTION
 * unchanged rows, is rewritten without both; any other is ingested as it is. A rewrite checks
 * that each unchanged run covered exactly the rows the scan counted in it.
 *
 * Contract:
 * - Only files whose key range holds a conflicting key are rewritten; the others are returned
 *   as they are. A rewritten file keeps every other entry in order, with the table options the
 *   original shows (format version, checksum type, compression, filter or none) unless
 *   `sstOptions` overrides them (block size and Bloom bits per key are not recorded in a file:
 *   they default to 4 KiB and 10).
 * - Each new file is written by SstFileWriter under a temporary name and renamed into place
 *   (`<stem>.skip.sst` beside the original unless `outputPathFor` says otherwise), so it is
 *   complete or absent. Originals are never modified. A file left with no entries is not
 *   written and not returned. If any rewrite fails, the files this call wrote are removed.
 * - Inputs must be put-only SSTs (as checkSstConflicts requires); anything else is
 *   NOT_SUPPORTED.
 * - The copy loop is a generator yielding every REWRITE_ENTRIES_PER_YIELD entries:
 *   rewriteWithoutKeys runs it in one go, rewriteWithoutKeysSliced a slice at a time
 *   (src/util/slices.ts) for a process that keeps serving meanwhile.
 */
import * as fs from 'fs';
import * as nodePath from 'path';
import { IngestError, assert } from '../util/errors';
import { compareByteRanges, compareUserKeys } from '../base/keyCompare';
import { TableReader } from '../sstable/reader/tableReader';
import { TRAILER_BYTES, ValueType, typeOf } from '../base/internalKey';
import { CompressionType } from '../sstable/compression';
import { SstFileWriter, SstFileWriterOptions } from '../sstwriter/sstFileWriter';
import { SliceOptions, Sliced, runSliced, runSlicedSync } from '../util/slices';
import { UnchangedRun, UnchangedRuns } from './unchangedRuns';

/** Entries copied between yields. */
export const REWRITE_ENTRIES_PER_YIELD = 256;

export interface RewriteOptions {
  /** Table options for rewritten files, over those derived from each original. */
  sstOptions?: Partial<SstFileWriterOptions>;
  /** Where the rewrite of `path` goes (default `<dir>/<stem>.skip.sst`). */
  outputPathFor?: (path: string) => string;
  /** Unchanged runs of the files (indexed as sstPaths) to leave out as well. */
  unchanged?: UnchangedRuns | null;
}

/**
 * A file with no conflicting key is rewritten without its unchanged rows only when at least
 * this fraction of it is unchanged (see dropsOf).
 */
export const UNCHANGED_REWRITE_MIN_FRACTION = 0.5;

export interface RewrittenFile {
  from: string;
  to: string;
  keptEntries: number;
  droppedEntries: number;
  /** Of droppedEntries, those left out as unchanged (the rest conflicted). */
  unchangedDropped: number;
}

export interface RewriteResult {
  /** The files to ingest instead of sstPaths, in the same order (emptied files left out). */
  paths: string[];
  rewritten: RewrittenFile[];
  /** Originals every entry of which was dropped. */
  emptied: string[];
  /** Originals left out whole, untouched, because every entry in them was unchanged. */
  unchangedLeftOut: string[];
  /** Unchanged rows left out (in rewrites and in files left out whole). */
  unchangedDropped: number;
}

export function defaultSkipPath(path: string): string {
  const ext = nodePath.extname(path);
  return nodePath.join(nodePath.dirname(path), `${nodePath.basename(path, ext)}.skip${ext === '' ? '.sst' : ext}`);
}

export function rewriteWithoutKeys(
  sstPaths: readonly string[],
  conflictingKeys: readonly Buffer[],
  opts: RewriteOptions = {},
): RewriteResult {
  return runSlicedSync(rewriteSlices(sstPaths, conflictingKeys, opts));
}

export function rewriteWithoutKeysSliced(
  sstPaths: readonly string[],
  conflictingKeys: readonly Buffer[],
  opts: RewriteOptions = {},
  slicing: SliceOptions = {},
): Promise<RewriteResult> {
  return runSliced(rewriteSlices(sstPaths, conflictingKeys, opts), slicing);
}

function* rewriteSlices(sstPaths: readonly string[], conflictingKeys: readonly Buffer[], opts: RewriteOptions): Sliced<RewriteResult> {
  const keys = conflictingKeys.slice().sort(compareUserKeys);
  const outputPathFor = opts.outputPathFor ?? defaultSkipPath;
  const result: RewriteResult = { paths: [], rewritten: [], emptied: [], unchangedLeftOut: [], unchangedDropped: 0 };
  try {
    for (let fileIndex = 0; fileIndex < sstPaths.length; fileIndex++) {
      const path = sstPaths[fileIndex];
      const reader = TableReader.open(path);
      try {
        const drops = dropsOf(reader, keys, opts.unchanged?.runsOf(fileIndex) ?? []);
        if (drops.kind === 'keep') {
          result.paths.push(path);
          continue;
        }
        if (drops.kind === 'unchanged') {
          result.unchangedLeftOut.push(path);
          result.unchangedDropped += drops.unchangedRows;
          continue;
        }
        const to = outputPathFor(path);
        if (nodePath.resolve(to) === nodePath.resolve(path))
          throw new IngestError('INVALID_ARGUMENT', `rewrite of ${path} would overwrite it`);
        const r = yield* rewriteOne(reader, drops.filter, to, { ...optionsOf(reader), ...opts.sstOptions });
        result.unchangedDropped += drops.filter.unchangedDropped;
        if (r === null) {
          result.emptied.push(path);
        } else {
          result.paths.push(to);
          result.rewritten.push({ from: path, ...r, unchangedDropped: drops.filter.unchangedDropped });
        }
      } finally {
        reader.close();
      }
    }
    return result;
  } catch (e) {
    for (const r of result.rewritten) fs.rmSync(r.to, { force: true });
    throw e;
  }
}

type FileDrops = { kind: 'keep' } | { kind: 'unchanged'; unchangedRows: number } | { kind: 'rewrite'; filter: DropFilter };

/**
 * What to do with one file: keep it as it is, leave it out (every entry unchanged: no rewrite
 * needed), or rewrite it without its conflicting keys and unchanged runs. A file with unchanged
 * rows and no conflicting key is rewritten only when at least UNCHANGED_REWRITE_MIN_FRACTION of
 * it is unchanged: below that, copying the rest costs more than ingesting a few values over
 * themselves (which changes nothing a reader sees, and compaction drops the older copies).
 */
function dropsOf(reader: TableReader, keys: readonly Buffer[], runs: readonly UnchangedRun[]): FileDrops {
  const from = firstKeyFrom(reader, keys);
  const holdsKey = from < keys.length && keyAtOrBelowLargest(reader, keys[from]);
  const unchangedRows = runs.reduce((n, r) => n + r.rows, 0);
  const entries = reader.properties.numEntries;
  assert(unchangedRows <= entries, `${reader.path}: ${unchangedRows} unchanged rows of ${entries} entries`);
  if (!holdsKey && unchangedRows === entries && entries > 0) return { kind: 'unchanged', unchangedRows };
  if (!holdsKey && unchangedRows < entries * UNCHANGED_REWRITE_MIN_FRACTION) return { kind: 'keep' };
  // From the first key at or above the file's smallest: no entry of this file lies below it.
  return { kind: 'rewrite', filter: new DropFilter(keys, from, runs) };
}

/**
 * The entries a rewrite drops: conflicting keys (from index `from` of the sorted list) and the
 * entries of unchanged runs. verify() checks each run dropped exactly its row count.
 */
class DropFilter {
  private j: number;
  private r = 0;
  private readonly droppedByRun: number[];
  unchangedDropped = 0;

  constructor(
    private readonly keys: readonly Buffer[],
    from: number,
    private readonly runs: readonly UnchangedRun[],
  ) {
    this.j = from;
    this.droppedByRun = runs.map(() => 0);
  }

  /** True when the entry whose user key is ikey[0, n) is left out. Called in key order. */
  drops(ikey: Buffer, n: number): boolean {
    const { keys, runs } = this;
    let c = 1;
    while (this.j < keys.length && (c = compareByteRanges(keys[this.j], 0, keys[this.j].length, ikey, 0, n)) < 0) this.j++;
    if (this.j < keys.length && c === 0) {
      this.j++;
      return true;
    }
    while (this.r < runs.length && compareByteRanges(runs[this.r].last, 0, runs[this.r].last.length, ikey, 0, n) < 0) this.r++;
    if (this.r === runs.length || compareByteRanges(runs[this.r].first, 0, runs[this.r].first.length, ikey, 0, n) > 0) return false;
    this.droppedByRun[this.r]++;
    this.unchangedDropped++;
    return true;
  }

  /** Each run covered exactly the rows the scan counted in it: anything else is a scan bug. */
  verify(path: string): void {
    for (let i = 0; i < this.runs.length; i++) {
      assert(
        this.droppedByRun[i] === this.runs[i].rows,
        `${path}: unchanged run ${i} holds ${this.droppedByRun[i]} entries, the scan counted ${this.runs[i].rows}`,
      );
    }
  }
}

/** Index of the first conflicting key at or above the file's smallest key (keys.length when none is, or the file is empty). */
function firstKeyFrom(reader: TableReader, keys: readonly Buffer[]): number {
  const smallest = reader.smallestKey();
  if (smallest === null) return keys.length;
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareByteRanges(keys[mid], 0, keys[mid].length, smallest, 0, smallest.length - TRAILER_BYTES) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function keyAtOrBelowLargest(reader: TableReader, key: Buffer): boolean {
  const largest = reader.largestKey();
  return largest !== null && compareByteRanges(key, 0, key.length, largest, 0, largest.length - TRAILER_BYTES) <= 0;
}

/** Copies every entry the filter keeps into `to`; null if nothing was left. */
function* rewriteOne(
  reader: TableReader,
  filter: DropFilter,
  to: string,
  options: Partial<SstFileWriterOptions>,
): Sliced<{ to: string; keptEntries: number; droppedEntries: number } | null> {
  const writer = new SstFileWriter(to, options);
  const it = reader.newIterator();
  let kept = 0;
  let dropped = 0;
  let steps = 0;
  try {
    for (it.first(); it.valid(); it.next()) {
      if (++steps === REWRITE_ENTRIES_PER_YIELD) {
        steps = 0;
        yield;
      }
      const ikey = it.key();
      if (typeOf(ikey) !== ValueType.Value) {
        throw new IngestError(
          'NOT_SUPPORTED',
          `${reader.path}: the skip rewrite handles put-only SSTs, found an entry of type ${typeOf(ikey)}`,
        );
      }
      const n = ikey.length - TRAILER_BYTES;
      if (filter.drops(ikey, n)) {
        dropped++;
        continue;
      }
      writer.put(ikey.subarray(0, n), it.value());
      kept++;
    }
    filter.verify(reader.path);
    if (kept === 0) {
      writer.abort();
      return null;
    }
    writer.finish();
    return { to, keptEntries: kept, droppedEntries: dropped };
  } catch (e) {
    writer.abort();
    throw e;
  } finally {
    it.close();
  }
}

/** The table options an SST shows about itself. */
function optionsOf(reader: TableReader): Partial<SstFileWriterOptions> {
  const p = reader.properties;
  return {
    formatVersion: reader.footer.formatVersion,
    checksumType: reader.footer.checksumType,
    compression: rewriteCompressionOf(p.compressionName),
    bloomBitsPerKey: p.filterPolicyName === '' ? 0 : 10,
  };
}

/**
 * The compression a rewrite writes for a table that shows `name` (its rocksdb.compression): the
 * same where the writer has it (LZ4HC is written as LZ4, ZSTDNotFinal as ZSTD); a compression the
 * writer lacks (Zlib) becomes LZ4, the default, rather than none: the rewrite keeps its size.
 */
export function rewriteCompressionOf(name: string): CompressionType {
  switch (name) {
    case 'NoCompression':
      return CompressionType.None;
    case 'Snappy':
      return CompressionType.Snappy;
    case 'ZSTD':
    case 'ZSTDNotFinal':
      return CompressionType.ZSTD;
    default:
      return CompressionType.LZ4;
  }
}
