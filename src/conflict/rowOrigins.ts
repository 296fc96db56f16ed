/**
 * Row origins: a side file per SST saying which input file and line each of its entries came
 * from, so a conflict report can name the CSV row of a conflicting key. The importer knows
 * (source, line) for every row it merges (its runs carry them); it writes one origins file per
 * SST, entry for entry, while it writes the SST.
 *
 * File `<stem>.origins` beside `<stem>.sst`: its layout, writer and parser are in
 * rowOriginsFile.ts. Entry i describes the SST's i-th key: the file holds no keys, so the
 * lookup walks the SST and the origins side by side. That costs a forward pass over the SST's
 * keys up to the last key looked up, paid only when conflicts are listed.
 *
 * Lookups (RowOriginIndex.sourceOf) must come in ascending key order per file for the walk to
 * stay forward (checkSstConflicts calls in key order); a smaller key restarts that file's walk.
 */
import * as fs from 'fs';
import { readVarint32, readVarint64, decoded } from '../util/coding';
import { CorruptionError } from '../util/errors';
import { TRAILER_BYTES } from '../base/internalKey';
import { compareByteRanges } from '../base/keyCompare';
import { TableIterator } from '../sstable/reader/tableIterator';
import { SstSet } from './sstSet';
import { RowSource } from './report';
import { OriginsFile, originsPathFor, readOriginsFile } from './rowOriginsFile';

/**
 * sourceOf for checkSstConflicts over SSTs with origins files beside them. Files without one
 * answer undefined. Keep it open for the check, then close() it.
 */
export class RowOriginIndex {
  private readonly run: SstSet;
  private readonly walks: Array<{ origins: OriginsFile | null; it: TableIterator | null; ordinal: number } | undefined>;

  private constructor(run: SstSet) {
    this.run = run;
    this.walks = new Array(run.files.length);
  }

  static open(sstPaths: readonly string[]): RowOriginIndex {
    return new RowOriginIndex(SstSet.open(sstPaths));
  }

  /** An index when at least one SST has an origins file beside it, else null (nothing opened). */
  static openIfPresent(sstPaths: readonly string[]): RowOriginIndex | null {
    return sstPaths.some((p) => fs.existsSync(originsPathFor(p))) ? RowOriginIndex.open(sstPaths) : null;
  }

  /** Where the row with `userKey` came from, or undefined when unknown. */
  sourceOf(userKey: Buffer): RowSource | undefined {
    const i = this.run.fileHolding(userKey);
    if (i < 0) return undefined;
    let w = this.walks[i];
    if (w === undefined) {
      const path = originsPathFor(this.run.files[i].path);
      const origins = fs.existsSync(path) ? readOriginsFile(path) : null;
      if (origins !== null && origins.entryCount !== this.run.files[i].entries) {
        throw new CorruptionError(
          path,
          0,
          `origins file lists ${origins.entryCount} rows but ${this.run.files[i].path} holds ${this.run.files[i].entries}`,
        );
      }
      w = { origins, it: null, ordinal: -1 };
      this.walks[i] = w;
    }
    if (w.origins === null) return undefined;
    // Walk the SST forward to the key, counting entries (restart if the key is behind us).
    if (w.it === null || (w.it.valid() && compareKeyOf(w.it, userKey) > 0)) {
      w.it?.close();
      w.it = this.run.files[i].reader.newIterator();
      w.it.first();
      w.ordinal = 0;
    }
    const it = w.it;
    while (it.valid() && compareKeyOf(it, userKey) < 0) {
      it.next();
      w.ordinal++;
    }
    if (!it.valid() || compareKeyOf(it, userKey) !== 0) return undefined;
    const o = w.origins;
    if (o.ordinal > w.ordinal) {
      o.ordinal = 0;
      o.offset = o.firstEntryOffset;
    }
    const data = o.data;
    let p = o.offset;
    while (o.ordinal < w.ordinal) {
      readVarint32(data, p, data.length);
      readVarint64(data, decoded.offset, data.length);
      p = decoded.offset;
      o.ordinal++;
    }
    o.offset = p;
    const source = readVarint32(data, p, data.length);
    const line = readVarint64(data, decoded.offset, data.length);
    if (source >= o.sources.length)
      throw new CorruptionError(originsPathFor(this.run.files[i].path), p, `source index ${source} out of range`);
    return { file: o.sources[source], line };
  }

  close(): void {
    for (const w of this.walks) w?.it?.close();
    this.run.close();
  }
}

function compareKeyOf(it: TableIterator, userKey: Buffer): number {
  const k = it.key();
  return compareByteRanges(k, 0, k.length - TRAILER_BYTES, userKey, 0, userKey.length);
}
