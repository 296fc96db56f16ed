/**
 * Writes the `rocksdb.properties` meta block: the encoded property map (src/sstable/properties.ts)
 * as an ordinary block with names sorted bytewise and a single restart point, never compressed.
 *
 * Contract: the block's bytes are what RocksDB 7.8 writes for the same map; the offset of the
 * 8-byte global-seqno value is reported so that ingestion can overwrite it in place, as RocksDB's
 * does.
 */
import { assert } from '../util/errors';
import { Prop } from '../sstable/format';
import { encodePropertyMap, TableProperties } from '../sstable/properties';
import { BlockBuilder, SINGLE_RESTART_INTERVAL } from './blockBuilder';

export interface PropertiesBlock {
  /** Block contents (without trailer). */
  contents: Buffer;
  /**
   * Offset of the 8-byte global-seqno value inside `contents`, or -1 if the block has none.
   * Ingestion may overwrite those bytes in place.
   */
  globalSeqnoValueOffset: number;
}

/** Encodes a property map as a properties block: names sorted bytewise, one restart point. */
export function buildPropertiesBlock(map: Map<string, Buffer>): PropertiesBlock {
  const entries = [...map].map(([name, value]) => ({ key: Buffer.from(name, 'utf8'), name, value }));
  entries.sort((a, b) => Buffer.compare(a.key, b.key));
  const block = new BlockBuilder({ restartInterval: SINGLE_RESTART_INTERVAL, keyOrder: Buffer.compare });
  let globalSeqnoValueOffset = -1;
  for (const e of entries) {
    block.add(e.key, e.value);
    if (e.name === Prop.GlobalSeqno) {
      assert(e.value.length === 8, 'global seqno value is exactly 8 bytes');
      globalSeqnoValueOffset = block.entriesSizeBytes() - 8;
    }
  }
  return { contents: Buffer.from(block.finish()), globalSeqnoValueOffset };
}

/** Convenience: `buildPropertiesBlock(encodePropertyMap(props))`. */
export function buildTablePropertiesBlock(props: TableProperties): PropertiesBlock {
  return buildPropertiesBlock(encodePropertyMap(props));
}
