/**
 * An external SST file offered for ingestion: opened, validated, and summarised by its bounds.
 *
 * Accepted: files an SstFileWriter wrote (ours or RocksDB's), i.e. BlockBasedTable files whose
 * properties say rocksdb.external_sst_file.version = 2, whose global-seqno property is still 0
 * (the engine assigns the sequence number and records it in its manifest; the file is never
 * rewritten), and that hold no merge operands (the engine has no merge operator).
 *
 * Checks, in order, each failing with an IngestError naming the file:
 * - the table opens: footer, metaindex, properties, index, filter and range_del block decode and
 *   (unless verifyChecksums is false) pass their checksums; format and features are ones the
 *   reader supports (CORRUPTION / NOT_SUPPORTED / IO);
 * - the properties above (INVALID_ARGUMENT, NOT_SUPPORTED);
 * - with verifyChecksums (the default): the whole file through TableReader.verify(), i.e. every
 *   block checksum, strictly ascending keys inside and across data blocks, index separators, the
 *   filter against every key and the properties against the contents (CORRUPTION). Without it,
 *   only the blocks above are read: key order is then taken on trust, as RocksDB does. With it,
 *   the sizes of the largest key and value are reported too, for callers that limit them (the
 *   server's SST uploads);
 * - the file holds at least one point key or range tombstone, and every tombstone is non-empty.
 *
 * Bounds follow the ingestion-side rule of rangedel/tombstoneBoundaries.ts: smallest = min(first
 * point key, each tombstone start), largest = max(last point key, each tombstone end as the
 * exclusive sentinel). They are computed here with sequence number 0; the ingestion job rewrites
 * them with the sequence number it assigns (ingestedBounds).
 */
import * as fs from 'fs';
import { CorruptionError, IngestError } from '../../util/errors';
import { Prop } from '../../sstable/format';
import { formatKey, sequenceOf, TRAILER_BYTES, typeOf, userKeyOf, writeTrailer } from '../../base/internalKey';
import { compareUserKeys } from '../../base/keyCompare';
import { TableReader } from '../../sstable/reader/tableReader';
import { FileBounds, fileBoundsWithTombstones, isExclusiveSentinel } from '../rangedel/tombstoneBoundaries';
import { UserKeyRange } from '../runningCompactions';

/** The only external-file version whose keys take a global sequence number. */
const INGESTIBLE_EXTERNAL_FILE_VERSION = 2;

export interface ExternalFileInfo {
  path: string;
  fileSizeBytes: number;
  /** Internal-key bounds with sequence number 0 (tombstone sentinels keep MAX_SEQUENCE_NUMBER). */
  bounds: FileBounds;
  /** The user-key range the bounds span. */
  range: UserKeyRange;
  numPointEntries: number;
  numRangeDeletions: number;
  /**
   * Sizes of the largest user key (range tombstone bounds included) and value, as verification
   * read them; null when the file was not verified (verifyChecksums false).
   */
  largestKeyBytes: number | null;
  largestValueBytes: number | null;
}

export interface InspectOptions {
  /** Read and check the whole file (default true). */
  verifyChecksums?: boolean;
}

/** The user-key range of internal-key bounds: exclusive at the end when largest is a sentinel. */
export function rangeOfBounds(bounds: FileBounds): UserKeyRange {
  return {
    smallest: userKeyOf(bounds.smallest),
    largest: userKeyOf(bounds.largest),
    largestExclusive: isExclusiveSentinel(bounds.largest),
  };
}

/**
 * The bounds an ingested file has once it is read with sequence number `seqno`: every bound key
 * takes it, except a tombstone end sentinel, which stays at MAX_SEQUENCE_NUMBER.
 */
export function ingestedBounds(bounds: FileBounds, seqno: number): FileBounds {
  return { smallest: withSequence(bounds.smallest, seqno), largest: withSequence(bounds.largest, seqno) };
}

function withSequence(internalKey: Buffer, seqno: number): Buffer {
  const out = Buffer.from(internalKey);
  if (isExclusiveSentinel(internalKey)) return out;
  writeTrailer(out, out.length - TRAILER_BYTES, seqno, typeOf(internalKey));
  return out;
}

/** Opens, validates and summarises one external SST; see the module comment. */
export function inspectExternalFile(path: string, opts: InspectOptions = {}): ExternalFileInfo {
  const verifyChecksums = opts.verifyChecksums ?? true;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(path);
  } catch (err) {
    throw new IngestError('IO', `cannot ingest ${path}: ${(err as Error).message}`, { cause: err });
  }
  if (!stat.isFile()) throw new IngestError('INVALID_ARGUMENT', `cannot ingest ${path}: not a regular file`);
  // No globalSeqno option: the reader reads the keys with the property's value, which must be 0.
  const reader = TableReader.open(path, { verifyChecksums });
  try {
    const props = reader.properties;
    if (!props.raw.has(Prop.ExternalSstVersion)) {
      throw new IngestError(
        'INVALID_ARGUMENT',
        `cannot ingest ${path}: not an external SST file (no ${Prop.ExternalSstVersion} property); only files written by an SstFileWriter can be ingested`,
      );
    }
    if (props.externalSstFileVersion !== INGESTIBLE_EXTERNAL_FILE_VERSION) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `cannot ingest ${path}: external SST file version ${props.externalSstFileVersion} (only version 2 takes a global sequence number)`,
      );
    }
    if (!props.raw.has(Prop.GlobalSeqno)) {
      throw new CorruptionError(path, 0, `external SST file version 2 without the ${Prop.GlobalSeqno} property`);
    }
    if (props.globalSeqno !== 0) {
      throw new IngestError(
        'INVALID_ARGUMENT',
        `cannot ingest ${path}: its ${Prop.GlobalSeqno} property is already ${props.globalSeqno} (a file ingested elsewhere with write_global_seqno); the engine assigns sequence numbers itself`,
      );
    }
    if (props.numMergeOperands > 0) {
      throw new IngestError(
        'NOT_SUPPORTED',
        `cannot ingest ${path}: it holds ${props.numMergeOperands} merge operands and the engine has no merge operator`,
      );
    }
    const sizes = verifyChecksums ? reader.verify() : null;

    const first = reader.smallestKey();
    const last = reader.largestKey();
    const tombstones = reader.rangeTombstones();
    for (const t of tombstones) {
      if (compareUserKeys(t.start, t.end) >= 0) {
        throw new CorruptionError(path, 0, `empty range tombstone [${formatKey(t.start)}, ${formatKey(t.end)})`);
      }
    }
    if (first === null && tombstones.length === 0) {
      throw new IngestError('INVALID_ARGUMENT', `cannot ingest ${path}: it holds no keys and no range tombstones`);
    }
    const bounds = fileBoundsWithTombstones(first, last, tombstones);
    // Keys were read with sequence 0 (the property's value); sentinels are the only exception.
    if (sequenceOf(bounds.smallest) !== 0 || (!isExclusiveSentinel(bounds.largest) && sequenceOf(bounds.largest) !== 0)) {
      throw new CorruptionError(path, 0, 'external file keys do not read back with sequence number 0');
    }
    return {
      path,
      fileSizeBytes: reader.fileSizeBytes,
      bounds,
      range: rangeOfBounds(bounds),
      numPointEntries: props.numEntries - props.numRangeDeletions,
      numRangeDeletions: tombstones.length,
      largestKeyBytes: sizes?.largestKeyBytes ?? null,
      largestValueBytes: sizes?.largestValueBytes ?? null,
    };
  } finally {
    reader.close();
  }
}
