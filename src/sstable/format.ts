/**
 * Constants of RocksDB's BlockBasedTable format (7.8): footer magic numbers and sizes,
 * metaindex block names, and property names. Kept in one place so writer and reader agree.
 */

export const BLOCK_BASED_TABLE_MAGIC = 0x88e241b785f4cff7n;
export const LEGACY_BLOCK_BASED_TABLE_MAGIC = 0xdb4775248b80fb57n;
/** Footer of format_version >= 1: checksum byte, 40 bytes of handles+padding, u32 version, u64 magic. */
export const FOOTER_BYTES = 53;
export const LEGACY_FOOTER_BYTES = 48;
export const FOOTER_HANDLES_BYTES = 40;

export const MIN_SUPPORTED_FORMAT_VERSION = 2;
export const MAX_SUPPORTED_FORMAT_VERSION = 5;
export const DEFAULT_FORMAT_VERSION = 5;

export const META_FULL_FILTER = 'fullfilter.rocksdb.BuiltinBloomFilter';
export const META_PARTITIONED_FILTER = 'partitionedfilter.rocksdb.BuiltinBloomFilter';
/** Metaindex name prefixes of the two filter kinds; the filter policy's name follows. */
export const FULL_FILTER_PREFIX = 'fullfilter.';
export const PARTITIONED_FILTER_PREFIX = 'partitionedfilter.';
export const META_PROPERTIES = 'rocksdb.properties';
export const META_RANGE_DEL = 'rocksdb.range_del';
/** The compression dictionary (RocksDB's CompressionOptions.max_dict_bytes > 0); we do not read it. */
export const META_COMPRESSION_DICT = 'rocksdb.compression_dict';

export const Prop = {
  IndexType: 'rocksdb.block.based.table.index.type',
  PrefixFiltering: 'rocksdb.block.based.table.prefix.filtering',
  WholeKeyFiltering: 'rocksdb.block.based.table.whole.key.filtering',
  ColumnFamilyId: 'rocksdb.column.family.id',
  ColumnFamilyName: 'rocksdb.column.family.name',
  Comparator: 'rocksdb.comparator',
  Compression: 'rocksdb.compression',
  CompressionOptions: 'rocksdb.compression_options',
  DbId: 'rocksdb.creating.db.identity',
  DbHostId: 'rocksdb.creating.host.identity',
  DbSessionId: 'rocksdb.creating.session.identity',
  CreationTime: 'rocksdb.creation.time',
  DataSize: 'rocksdb.data.size',
  DeletedKeys: 'rocksdb.deleted.keys',
  GlobalSeqno: 'rocksdb.external_sst_file.global_seqno',
  ExternalSstVersion: 'rocksdb.external_sst_file.version',
  FileCreationTime: 'rocksdb.file.creation.time',
  FilterPolicy: 'rocksdb.filter.policy',
  FilterSize: 'rocksdb.filter.size',
  FixedKeyLength: 'rocksdb.fixed.key.length',
  FormatVersion: 'rocksdb.format.version',
  IndexKeyIsUserKey: 'rocksdb.index.key.is.user.key',
  IndexPartitions: 'rocksdb.index.partitions',
  IndexSize: 'rocksdb.index.size',
  IndexValueIsDeltaEncoded: 'rocksdb.index.value.is.delta.encoded',
  MergeOperands: 'rocksdb.merge.operands',
  MergeOperator: 'rocksdb.merge.operator',
  NumDataBlocks: 'rocksdb.num.data.blocks',
  NumEntries: 'rocksdb.num.entries',
  NumFilterEntries: 'rocksdb.num.filter_entries',
  NumRangeDeletions: 'rocksdb.num.range-deletions',
  OldestKeyTime: 'rocksdb.oldest.key.time',
  OriginalFileNumber: 'rocksdb.original.file.number',
  PrefixExtractorName: 'rocksdb.prefix.extractor.name',
  PropertyCollectors: 'rocksdb.property.collectors',
  RawKeySize: 'rocksdb.raw.key.size',
  RawValueSize: 'rocksdb.raw.value.size',
  TopLevelIndexSize: 'rocksdb.top-level.index.size',
} as const;

/** Properties whose values are not varint64s. Everything else numeric is a varint64. */
export const FIXED32_PROPERTIES: ReadonlySet<string> = new Set([Prop.IndexType, Prop.ExternalSstVersion]);
export const FIXED64_PROPERTIES: ReadonlySet<string> = new Set([Prop.GlobalSeqno]);
export const STRING_PROPERTIES: ReadonlySet<string> = new Set([
  Prop.PrefixFiltering,
  Prop.WholeKeyFiltering,
  Prop.ColumnFamilyName,
  Prop.Comparator,
  Prop.Compression,
  Prop.CompressionOptions,
  Prop.DbId,
  Prop.DbHostId,
  Prop.DbSessionId,
  Prop.FilterPolicy,
  Prop.MergeOperator,
  Prop.PrefixExtractorName,
  Prop.PropertyCollectors,
  'rocksdb.seqno.time.map',
]);
