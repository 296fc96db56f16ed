/**
 * Metaindex block: the directory of a table's meta blocks (filter, properties, range_del).
 *
 * On disk: an ordinary block (blockBuilder.ts) with restart interval 1, never compressed;
 * key = block name (ASCII), value = BlockHandle (varint64 offset ‖ varint64 size), entries
 * sorted bytewise by name. The footer points at this block.
 *
 * Contract: names are unique; they may be added in any order and are sorted by `finish()`.
 */
import { BlockHandle, ByteSink, MAX_BLOCK_HANDLE_BYTES, putBlockHandle } from '../util/coding';
import { assert } from '../util/errors';
import { BlockBuilder } from './blockBuilder';

export class MetaindexBuilder {
  private readonly entries: Array<{ name: Buffer; handle: BlockHandle }> = [];

  add(name: string, handle: BlockHandle): void {
    const key = Buffer.from(name, 'latin1');
    assert(!this.entries.some((e) => e.name.equals(key)), `meta block ${name} added twice`);
    this.entries.push({ name: key, handle: { offset: handle.offset, size: handle.size } });
  }

  /** The block contents (a fresh buffer). */
  finish(): Buffer {
    const sorted = [...this.entries].sort((a, b) => Buffer.compare(a.name, b.name));
    const block = new BlockBuilder({ restartInterval: 1, keyOrder: Buffer.compare, initialCapacityBytes: 256 });
    const value = new ByteSink(MAX_BLOCK_HANDLE_BYTES, MAX_BLOCK_HANDLE_BYTES);
    for (const e of sorted) {
      value.clear();
      putBlockHandle(value, e.handle);
      block.add(e.name, value.view());
    }
    return Buffer.from(block.finish());
  }
}
