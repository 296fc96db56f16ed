/**
 * Table properties: the typed view of the `rocksdb.properties` meta block, the name → value
 * encoding the writer uses and the decoder the reader uses. Building the block itself is the
 * writer's (src/sstwriter/propertiesBlock.ts).
 *
 * On disk: an ordinary block (src/sstwriter/blockBuilder.ts) with a single restart point, entries sorted
 * bytewise by name, no duplicates, never compressed. Each value is, by property:
 *   - u32le:  rocksdb.block.based.table.index.type, rocksdb.external_sst_file.version
 *   - u64le:  rocksdb.external_sst_file.global_seqno — always exactly 8 bytes, because RocksDB's
 *             ingestion overwrites these bytes in place (without fixing the block checksum)
 *   - string: raw bytes, no terminator (names listed in src/sstable/format.ts STRING_PROPERTIES)
 *   - varint64: every other built-in numeric property
 * Unknown (user-collected) properties are carried as raw bytes.
 *
 * What gets written follows RocksDB 7.8: every numeric property always (0 included) except
 * index.partitions / top-level.index.size (only for partitioned indexes), file.creation.time and
 * original.file.number (only if > 0); strings only when non-empty; the block-based-table
 * properties always; the external-file pair only for SstFileWriter files
 * (externalSstFileVersion > 0).
 *
 * Decoding contract: `decodePropertyMap` throws RangeError naming the property when a value is
 * malformed; the reader turns that into a CorruptionError with the file and block offset.
 */
import { ByteSink, readVarint64 } from '../util/coding';
import { assert } from '../util/errors';
import { FIXED32_PROPERTIES, FIXED64_PROPERTIES, Prop, STRING_PROPERTIES } from './format';

/** Column family id meaning "unknown" (what SstFileWriter records). */
export const UNKNOWN_COLUMN_FAMILY_ID = 0x7fffffff;

/** RocksDB 7.8's informational compression-options string, identical for every codec we write. */
export const DEFAULT_COMPRESSION_OPTIONS =
  'window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; zstd_max_train_bytes=0; enabled=0; max_dict_buffer_bytes=0; use_zstd_dict_trainer=1; ';

export interface TableProperties {
  /** End offset of the last data block, including its trailer, in bytes. */
  dataSize: number;
  /** Uncompressed index block length + 5 (partitioned: all partitions + top level), bytes. */
  indexSize: number;
  /** Number of index partitions (0 = not partitioned). */
  indexPartitions: number;
  /** Uncompressed top-level index length for partitioned indexes, bytes (0 otherwise). */
  topLevelIndexSize: number;
  /** Filter block contents length (without block trailer), bytes; 0 without a filter. */
  filterSize: number;
  /** Sum of internal-key lengths of all entries incl. tombstone start keys, bytes. */
  rawKeySize: number;
  /** Sum of value lengths incl. tombstone end keys, bytes. */
  rawValueSize: number;
  numDataBlocks: number;
  /** All entries, range tombstones included. */
  numEntries: number;
  /** Keys hashed into the filter after dropping adjacent duplicates. */
  numFilterEntries: number;
  /** rocksdb.deleted.keys: Deletion + SingleDeletion entries + range tombstones. */
  numDeletions: number;
  numMergeOperands: number;
  numRangeDeletions: number;
  /** The PlainTable-era property rocksdb.format.version: 0 for block-based tables. */
  formatVersion: number;
  fixedKeyLength: number;
  columnFamilyId: number;
  /** Strings: '' means absent (RocksDB writes only non-empty strings). */
  columnFamilyName: string;
  filterPolicyName: string;
  comparatorName: string;
  mergeOperatorName: string;
  prefixExtractorName: string;
  propertyCollectorsNames: string;
  compressionName: string;
  compressionOptions: string;
  /** Seconds since the epoch (oldest ancestor time); 0 = unknown. */
  creationTime: number;
  /** Seconds since the epoch; 0 = unknown. */
  oldestKeyTime: number;
  /** Seconds since the epoch; 0 = unknown (then not written). */
  fileCreationTime: number;
  dbId: string;
  dbSessionId: string;
  dbHostId: string;
  /** 0 = absent. */
  originalFileNumber: number;
  /** 0 binary search, 1 hash search, 2 two-level (partitioned), 3 binary search with first key. */
  indexType: number;
  indexKeyIsUserKey: boolean;
  indexValueIsDeltaEncoded: boolean;
  /** rocksdb.external_sst_file.version; 0 = not an external (SstFileWriter) file. */
  externalSstFileVersion: number;
  /** rocksdb.external_sst_file.global_seqno (meaningful only when externalSstFileVersion > 0). */
  globalSeqno: number;
  /** Absent means true (RocksDB treats a missing feature flag as supported). */
  wholeKeyFiltering: boolean;
  prefixFiltering: boolean;
  /** Every property as stored: name → raw value bytes (including unknown ones). */
  raw: Map<string, Buffer>;
}

/** Properties of a table before anything is known: all counters 0, strings absent. */
export function emptyTableProperties(): TableProperties {
  return {
    dataSize: 0,
    indexSize: 0,
    indexPartitions: 0,
    topLevelIndexSize: 0,
    filterSize: 0,
    rawKeySize: 0,
    rawValueSize: 0,
    numDataBlocks: 0,
    numEntries: 0,
    numFilterEntries: 0,
    numDeletions: 0,
    numMergeOperands: 0,
    numRangeDeletions: 0,
    formatVersion: 0,
    fixedKeyLength: 0,
    columnFamilyId: UNKNOWN_COLUMN_FAMILY_ID,
    columnFamilyName: '',
    filterPolicyName: '',
    comparatorName: '',
    mergeOperatorName: '',
    prefixExtractorName: '',
    propertyCollectorsNames: '',
    compressionName: '',
    compressionOptions: '',
    creationTime: 0,
    oldestKeyTime: 0,
    fileCreationTime: 0,
    dbId: '',
    dbSessionId: '',
    dbHostId: '',
    originalFileNumber: 0,
    indexType: 0,
    indexKeyIsUserKey: false,
    indexValueIsDeltaEncoded: false,
    externalSstFileVersion: 0,
    globalSeqno: 0,
    wholeKeyFiltering: true,
    prefixFiltering: true,
    raw: new Map(),
  };
}

type NumericField = {
  [K in keyof TableProperties]: TableProperties[K] extends number ? K : never;
}[keyof TableProperties];
type StringField = {
  [K in keyof TableProperties]: TableProperties[K] extends string ? K : never;
}[keyof TableProperties];

/** varint64 properties RocksDB always writes, by field. */
const ALWAYS_VARINT: ReadonlyArray<readonly [string, NumericField]> = [
  [Prop.RawKeySize, 'rawKeySize'],
  [Prop.RawValueSize, 'rawValueSize'],
  [Prop.DataSize, 'dataSize'],
  [Prop.IndexSize, 'indexSize'],
  [Prop.NumEntries, 'numEntries'],
  [Prop.NumFilterEntries, 'numFilterEntries'],
  [Prop.DeletedKeys, 'numDeletions'],
  [Prop.MergeOperands, 'numMergeOperands'],
  [Prop.NumRangeDeletions, 'numRangeDeletions'],
  [Prop.NumDataBlocks, 'numDataBlocks'],
  [Prop.FilterSize, 'filterSize'],
  [Prop.FormatVersion, 'formatVersion'],
  [Prop.FixedKeyLength, 'fixedKeyLength'],
  [Prop.ColumnFamilyId, 'columnFamilyId'],
  [Prop.CreationTime, 'creationTime'],
  [Prop.OldestKeyTime, 'oldestKeyTime'],
];

/** varint64 properties written only when non-zero. */
const NONZERO_VARINT: ReadonlyArray<readonly [string, NumericField]> = [
  [Prop.IndexPartitions, 'indexPartitions'],
  [Prop.TopLevelIndexSize, 'topLevelIndexSize'],
  [Prop.FileCreationTime, 'fileCreationTime'],
  [Prop.OriginalFileNumber, 'originalFileNumber'],
];

/** String properties, written only when non-empty. */
const STRINGS: ReadonlyArray<readonly [string, StringField]> = [
  [Prop.ColumnFamilyName, 'columnFamilyName'],
  [Prop.FilterPolicy, 'filterPolicyName'],
  [Prop.Comparator, 'comparatorName'],
  [Prop.MergeOperator, 'mergeOperatorName'],
  [Prop.PrefixExtractorName, 'prefixExtractorName'],
  [Prop.PropertyCollectors, 'propertyCollectorsNames'],
  [Prop.Compression, 'compressionName'],
  [Prop.CompressionOptions, 'compressionOptions'],
  [Prop.DbId, 'dbId'],
  [Prop.DbSessionId, 'dbSessionId'],
  [Prop.DbHostId, 'dbHostId'],
];

const BUILT_IN_NAMES: ReadonlySet<string> = new Set(Object.values(Prop));

function varint64Value(v: number): Buffer {
  const s = new ByteSink(16, 16);
  s.putVarint64(v);
  return Buffer.from(s.view());
}

function fixed32Value(v: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(v >>> 0, 0);
  return b;
}

function fixed64Value(v: number): Buffer {
  assert(Number.isSafeInteger(v) && v >= 0, `global seqno ${v} must be a non-negative safe integer`);
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64LE(BigInt(v), 0);
  return b;
}

/**
 * The name → value map RocksDB 7.8 would write for `props`. Unknown names in `props.raw`
 * (user-collected properties) are kept; built-in names are always re-encoded from the fields.
 */
export function encodePropertyMap(props: TableProperties): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [name, value] of props.raw) {
    if (!BUILT_IN_NAMES.has(name)) out.set(name, value);
  }
  for (const [name, field] of ALWAYS_VARINT) out.set(name, varint64Value(props[field]));
  for (const [name, field] of NONZERO_VARINT) {
    if (props[field] > 0) out.set(name, varint64Value(props[field]));
  }
  out.set(Prop.IndexKeyIsUserKey, varint64Value(props.indexKeyIsUserKey ? 1 : 0));
  out.set(Prop.IndexValueIsDeltaEncoded, varint64Value(props.indexValueIsDeltaEncoded ? 1 : 0));
  for (const [name, field] of STRINGS) {
    if (props[field].length > 0) out.set(name, Buffer.from(props[field], 'utf8'));
  }
  out.set(Prop.IndexType, fixed32Value(props.indexType));
  out.set(Prop.WholeKeyFiltering, Buffer.from(props.wholeKeyFiltering ? '1' : '0'));
  out.set(Prop.PrefixFiltering, Buffer.from(props.prefixFiltering ? '1' : '0'));
  if (props.externalSstFileVersion > 0) {
    out.set(Prop.ExternalSstVersion, fixed32Value(props.externalSstFileVersion));
    out.set(Prop.GlobalSeqno, fixed64Value(props.globalSeqno));
  }
  return out;
}

function decodeVarintProperty(name: string, value: Buffer): number {
  try {
    // RocksDB ignores bytes after the varint; so do we.
    return readVarint64(value, 0);
  } catch (e) {
    throw new RangeError(`property ${name}: malformed varint64 value 0x${value.toString('hex')}: ${(e as Error).message}`);
  }
}

function decodeFixedProperty(name: string, value: Buffer, bytes: 4 | 8): number {
  if (value.length !== bytes) {
    throw new RangeError(`property ${name}: expected a ${bytes}-byte value, got ${value.length} bytes`);
  }
  if (bytes === 4) return value.readUInt32LE(0);
  const big = value.readBigUInt64LE(0);
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`property ${name}: value ${big} exceeds 2^53`);
  return Number(big);
}

/**
 * Decodes a raw name → value map (as read from a properties block) into typed properties.
 * Missing properties keep the defaults of `emptyTableProperties()` (numbers 0, strings '',
 * filtering flags true), except columnFamilyId, which RocksDB also defaults to "unknown".
 */
export function decodePropertyMap(map: Map<string, Buffer>): TableProperties {
  const props = emptyTableProperties();
  props.raw = new Map(map);
  const numeric = new Map<string, NumericField>([...ALWAYS_VARINT, ...NONZERO_VARINT]);
  const strings = new Map<string, StringField>(STRINGS);
  for (const [name, value] of map) {
    const nf = numeric.get(name);
    if (nf !== undefined) {
      props[nf] = decodeVarintProperty(name, value);
      continue;
    }
    const sf = strings.get(name);
    if (sf !== undefined) {
      props[sf] = value.toString('utf8');
      continue;
    }
    switch (name) {
      case Prop.IndexKeyIsUserKey:
        props.indexKeyIsUserKey = decodeVarintProperty(name, value) !== 0;
        break;
      case Prop.IndexValueIsDeltaEncoded:
        props.indexValueIsDeltaEncoded = decodeVarintProperty(name, value) !== 0;
        break;
      case Prop.IndexType:
        props.indexType = decodeFixedProperty(name, value, 4);
        break;
      case Prop.ExternalSstVersion:
        props.externalSstFileVersion = decodeFixedProperty(name, value, 4);
        break;
      case Prop.GlobalSeqno:
        props.globalSeqno = decodeFixedProperty(name, value, 8);
        break;
      case Prop.WholeKeyFiltering:
        props.wholeKeyFiltering = value.toString('latin1') !== '0';
        break;
      case Prop.PrefixFiltering:
        props.prefixFiltering = value.toString('latin1') !== '0';
        break;
      default:
        break; // user-collected or newer property: kept in `raw` only
    }
  }
  return props;
}

// Load-time guard: every fixed-width / string property name in src/sstable/format.ts is handled above.
const HANDLED_FIXED = [Prop.IndexType, Prop.ExternalSstVersion, Prop.GlobalSeqno];
assert(
  HANDLED_FIXED.every((n) => FIXED32_PROPERTIES.has(n) || FIXED64_PROPERTIES.has(n)) && STRINGS.every(([n]) => STRING_PROPERTIES.has(n)),
  'src/sstable/properties.ts and src/sstable/format.ts agree on property encodings',
);
