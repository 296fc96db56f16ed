/**
 * Replace-range ingestion: "make [start, end) hold exactly the ingested files' keys", atomically.
 *
 * The ingestion job writes one extra table into the database directory: an external-format file
 * (version 2, sequence 0, like SstFileWriter's) holding only the range tombstone [start, end).
 * It is placed first, like any ingested file, and gets a sequence number S above the existing
 * data in the range; the ingested files that overlap it then count it as data, so they land above
 * it with sequence numbers > S. All of them go into the manifest in the one edit of the
 * ingestion, so old keys in the range vanish at the instant the new ones appear: no reader sees
 * the range empty, or old and new keys mixed.
 *
 *   before:  L6  {c=1, d=1, g=1}             ingest {d=2, e=2} with replaceRange [b, h)
 *   after:   L4  {d=2, e=2}@S+1              walk stops at L5: the tombstone file is there
 *            L5  [b, h)@S                    walk stops at L6: c, d, g lie in [b, h)
 *            L6  {c=1, d=1, g=1}
 *   reads:   c and g are hidden by [b, h)@S; d = 2 (S+1 > S); e = 2
 *
 * If nothing in the database lies in [start, end) the tombstone would delete nothing: the job then
 * leaves the file out of the edit and deletes it.
 *
 * The file lives in the database directory under its final table name from the start (never in a
 * temporary name), so a crash before the manifest names it leaves an unreferenced table that the
 * next open deletes.
 */
import { IngestError } from '../../util/errors';
import { formatKey } from '../../base/internalKey';
import { TableFileWriter } from '../../sstwriter/tableFileWriter';
import { compareUserKeys } from '../../base/keyCompare';
import { tableFileName } from '../fileNames';
import { FileBounds, fileBoundsWithTombstones } from '../rangedel/tombstoneBoundaries';

/** The user-key range [start, end) an ingestion replaces. */
export interface ReplaceRange {
  start: Buffer;
  end: Buffer;
}

export function checkReplaceRange(range: ReplaceRange): void {
  if (compareUserKeys(range.start, range.end) >= 0) {
    throw new IngestError('INVALID_ARGUMENT', `replaceRange start ${formatKey(range.start)} must be below its end ${formatKey(range.end)}`);
  }
}

/** Bounds of the tombstone file, sequence 0: (start, 0, RangeDeletion) .. (end, MAX, RangeDeletion). */
export function replaceRangeBounds(range: ReplaceRange): FileBounds {
  return fileBoundsWithTombstones(null, null, [{ start: range.start, end: range.end, seq: 0 }]);
}

/** Writes table `fileNumber` in `dir` holding only [start, end) at sequence 0; returns its size. */
export function writeReplaceRangeTable(dir: string, fileNumber: number, range: ReplaceRange): number {
  checkReplaceRange(range);
  const writer = new TableFileWriter(tableFileName(dir, fileNumber), {
    externalFile: true,
    originalFileNumber: fileNumber,
    backgroundCompression: false,
  });
  try {
    writer.addRangeTombstone(range.start, range.end, 0);
    return writer.finish().fileSizeBytes;
  } catch (err) {
    writer.abort();
    throw err;
  }
}
