/**
 * The `skip` policy's rewrite: new SST files without the conflicting keys, so that ingesting
 * them changes no live value (conflicting rows are skipped; new and unchanged rows go in).
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
import { IngestError } from '../util/errors';
import { compareByteRanges, compareUserKeys } from '../base/keyCompare';
import { TableReader } from '../sstable/reader/tableReader';
import { TRAILER_BYTES, ValueType, typeOf } from '../base/internalKey';
import { CompressionType } from '../sstable/compression';
import { SstFileWriter, SstFileWriterOptions } from '../sstwriter/sstFileWriter';
import { SliceOptions, Sliced, runSliced, runSlicedSync } from '../util/slices';

/** Entries copied between yields. */
export const REWRITE_ENTRIES_PER_YIELD = 256;

export interface RewriteOptions {
  /** Table options for rewritten files, over those derived from each original. */
  sstOptions?: Partial<SstFileWriterOptions>;
  /** Where the rewrite of `path` goes (default `<dir>/<stem>.skip.sst`). */
  outputPathFor?: (path: string) => string;
}

export interface RewrittenFile {
  from: string;
  to: string;
  keptEntries: number;
  droppedEntries: number;
}

export interface RewriteResult {
  /** The files to ingest instead of sstPaths, in the same order (emptied files left out). */
  paths: string[];
  rewritten: RewrittenFile[];
  /** Originals every entry of which was dropped. */
  emptied: string[];
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
  const result: RewriteResult = { paths: [], rewritten: [], emptied: [] };
  try {
    for (const path of sstPaths) {
      const reader = TableReader.open(path);
      try {
        const first = firstKeyInFile(reader, keys);
        if (first < 0) {
          result.paths.push(path);
          continue;
        }
        const to = outputPathFor(path);
        if (nodePath.resolve(to) === nodePath.resolve(path))
          throw new IngestError('INVALID_ARGUMENT', `rewrite of ${path} would overwrite it`);
        const r = yield* rewriteOne(reader, keys, first, to, { ...optionsOf(reader), ...opts.sstOptions });
        if (r === null) {
          result.emptied.push(path);
        } else {
          result.paths.push(to);
          result.rewritten.push({ from: path, ...r });
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

/** Index of the first conflicting key within the file's key range, or -1. */
function firstKeyInFile(reader: TableReader, keys: readonly Buffer[]): number {
  const smallest = reader.smallestKey();
  const largest = reader.largestKey();
  if (smallest === null || largest === null) return -1;
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareByteRanges(keys[mid], 0, keys[mid].length, smallest, 0, smallest.length - TRAILER_BYTES) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo === keys.length) return -1;
  return compareByteRanges(keys[lo], 0, keys[lo].length, largest, 0, largest.length - TRAILER_BYTES) <= 0 ? lo : -1;
}

/** Copies every entry but `keys` (from index `from`) into `to`; null if nothing was left. */
function* rewriteOne(
  reader: TableReader,
  keys: readonly Buffer[],
  from: number,
  to: string,
  options: Partial<SstFileWriterOptions>,
): Sliced<{ to: string; keptEntries: number; droppedEntries: number } | null> {
  const writer = new SstFileWriter(to, options);
  const it = reader.newIterator();
  let j = from;
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
      let c = 1;
      while (j < keys.length && (c = compareByteRanges(keys[j], 0, keys[j].length, ikey, 0, n)) < 0) j++;
      if (j < keys.length && c === 0) {
        dropped++;
        j++;
        continue;
      }
      writer.put(ikey.subarray(0, n), it.value());
      kept++;
    }
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
