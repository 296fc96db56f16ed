/**
 * The iterator's automatic readahead (src/sstable/reader/blockPrefetcher.ts): when it starts,
 * how it grows, that it never reads past the blocks, and, on real tables through both block
 * paths (native codec and JavaScript), that a sequential scan reads the same entries with far
 * fewer reads, that point lookups and seeks never read ahead, and that a corrupt block met
 * through the readahead buffer is still a CorruptionError naming the file and the block.
 */
import * as fs from 'fs';
import * as path from 'path';
import { perf, resetPerfContext } from '../../../src/base/perfContext';
import { sequenceOf, userKeyOf } from '../../../src/base/internalKey';
import { CompressionType } from '../../../src/sstable/compression';
import { BLOCK_TRAILER_BYTES } from '../../../src/sstable/checksum';
import { nativeBlockCodec } from '../../../src/sstable/nativeBlockCodec';
import {
  AUTO_READAHEAD_AFTER_READS,
  BlockPrefetcher,
  INITIAL_READAHEAD_BYTES,
  MAX_READAHEAD_BYTES,
  PrefetchFile,
} from '../../../src/sstable/reader/blockPrefetcher';
import { TableReader } from '../../../src/sstable/reader/tableReader';
import { TableFileWriter } from '../../../src/sstwriter/tableFileWriter';
import { CorruptionError } from '../../../src/util/errors';
import { Entry, prng, randomEntries, useTmpDir } from './support';

/** A file of `sizeBytes` whose byte i is i mod 251, recording every read. */
function fakeFile(sizeBytes: number): PrefetchFile & { reads: Array<{ position: number; length: number }> } {
  const reads: Array<{ position: number; length: number }> = [];
  return {
    blocksEndBytes: sizeBytes,
    reads,
    readInto(buf: Buffer, position: number, length: number): void {
      expect(position + length).toBeLessThanOrEqual(sizeBytes);
      reads.push({ position, length });
      for (let i = 0; i < length; i++) buf[i] = (position + i) % 251;
    },
  };
}

/** Asks for consecutive blocks of `contentsBytes` from `start`; returns how many came from the buffer. */
function readSequential(p: BlockPrefetcher, file: PrefetchFile, start: number, blocks: number, contentsBytes: number): number {
  let fromBuffer = 0;
  for (let b = 0, offset = start; b < blocks; b++, offset += contentsBytes + BLOCK_TRAILER_BYTES) {
    const bytes = p.bytesFor(file, offset, contentsBytes);
    if (bytes === null) continue;
    fromBuffer++;
    // The answer holds exactly the file's bytes of this block.
    for (let i = 0; i < contentsBytes + BLOCK_TRAILER_BYTES; i += 97) expect(bytes[p.bufferOffset + i]).toBe((offset + i) % 251);
  }
  return fromBuffer;
}

describe('BlockPrefetcher', () => {
  const blockBytes = 4091; // 4 KiB with its trailer

  test('starts after AUTO_READAHEAD_AFTER_READS sequential reads, then doubles its reads up to the maximum', () => {
    const file = fakeFile(64 * 1024 * 1024);
    const p = new BlockPrefetcher();
    const blocks = 400;
    const fromBuffer = readSequential(p, file, 0, blocks, blockBytes);
    expect(fromBuffer).toBe(blocks - AUTO_READAHEAD_AFTER_READS);
    const lengths = file.reads.map((r) => r.length);
    expect(lengths[0]).toBe(INITIAL_READAHEAD_BYTES);
    for (let i = 1; i < lengths.length; i++) expect(lengths[i]).toBe(Math.min(MAX_READAHEAD_BYTES, lengths[i - 1] * 2));
    // 398 blocks of 4 KiB (about 1.6 MB) in a handful of reads instead of 398.
    expect(file.reads.length).toBeLessThan(12);
  });

  test('a read elsewhere starts over, and release() drops the buffer', () => {
    const file = fakeFile(16 * 1024 * 1024);
    const p = new BlockPrefetcher();
    expect(readSequential(p, file, 0, 10, blockBytes)).toBe(10 - AUTO_READAHEAD_AFTER_READS);
    const readsBefore = file.reads.length;
    // A seek to another place: not sequential any more, so read directly again.
    expect(p.bytesFor(file, 8 * 1024 * 1024, blockBytes)).toBeNull();
    expect(file.reads.length).toBe(readsBefore);
    expect(readSequential(p, file, 8 * 1024 * 1024 + blockBytes + BLOCK_TRAILER_BYTES, 3, blockBytes)).toBe(2);
    expect(file.reads[file.reads.length - 1].length).toBe(INITIAL_READAHEAD_BYTES);
    p.release();
    expect(p.bytesFor(file, 0, blockBytes)).toBeNull();
  });

  test('never reads past the end of the blocks, and serves a block larger than the readahead whole', () => {
    const file = fakeFile(100_000);
    const p = new BlockPrefetcher();
    readSequential(p, file, 0, 24, blockBytes);
    for (const r of file.reads) expect(r.position + r.length).toBeLessThanOrEqual(100_000);
    const big = fakeFile(4 * 1024 * 1024);
    const q = new BlockPrefetcher();
    const bigBlockBytes = 3 * INITIAL_READAHEAD_BYTES;
    expect(readSequential(q, big, 0, 4, bigBlockBytes)).toBe(4 - AUTO_READAHEAD_AFTER_READS);
    expect(big.reads[0].length).toBe(bigBlockBytes + BLOCK_TRAILER_BYTES);
  });
});

describe('readahead in table scans', () => {
  const tmpDir = useTmpDir('prefetch-');
  let file: string;
  let entries: Entry[];
  let dataBlocks: number;

  beforeAll(() => {
    entries = randomEntries(prng(39), 6000);
    file = path.join(tmpDir(), 'scan.sst');
    const writer = new TableFileWriter(file, { blockSizeBytes: 512, compression: CompressionType.LZ4, formatVersion: 5 });
    for (const e of entries) writer.add(e.key, e.value);
    dataBlocks = writer.finish().numDataBlocks;
    expect(dataBlocks).toBeGreaterThan(200);
  });

  const paths = nativeBlockCodec === null ? [false] : [true, false];

  test.each(paths)('native codec %s: a sequential scan reads every entry with far fewer reads', (useNativeCodec) => {
    const reader = TableReader.open(file, { useNativeCodec });
    try {
      resetPerfContext();
      const it = reader.newIterator({ fillCache: false });
      const seen: string[] = [];
      for (it.first(); it.valid(); it.next()) seen.push(`${it.key().toString('hex')}=${it.value().toString('hex')}`);
      it.close();
      expect(seen).toEqual(entries.map((e) => `${e.key.toString('hex')}=${e.value.toString('hex')}`));
      expect(perf.dataBlocksRead).toBe(dataBlocks);
      expect(perf.readaheadBlocks).toBe(dataBlocks - AUTO_READAHEAD_AFTER_READS);
      // Each fill serves many blocks: the reads are a small fraction of the blocks.
      expect(perf.readaheadReads).toBeGreaterThan(0);
      expect(perf.readaheadReads * 10).toBeLessThan(dataBlocks);
    } finally {
      reader.close();
    }
  });

  test('point lookups and seeks to scattered keys never read ahead', () => {
    const reader = TableReader.open(file);
    try {
      resetPerfContext();
      const rand = prng(7);
      const it = reader.newIterator({ fillCache: false });
      for (let i = 0; i < 300; i++) {
        const e = entries[Math.floor(rand() * entries.length)];
        // The newest version at or below e's own sequence number is e.
        const found = reader.get(userKeyOf(e.key), sequenceOf(e.key));
        expect(found?.seq).toBe(sequenceOf(e.key));
        expect(found?.value.equals(e.value)).toBe(true);
        it.seekGE(e.key);
        expect(it.valid() && it.key().equals(e.key)).toBe(true);
      }
      it.close();
      expect(perf.dataBlocksRead).toBeGreaterThan(300);
      expect(perf.readaheadBlocks).toBe(0);
      expect(perf.readaheadReads).toBe(0);
    } finally {
      reader.close();
    }
  });

  test.each(paths)('native codec %s: a corrupt block met through the readahead is a CorruptionError naming it', (useNativeCodec) => {
    const corrupt = path.join(tmpDir(), `corrupt-${String(useNativeCodec)}.sst`);
    fs.copyFileSync(file, corrupt);
    const reader = TableReader.open(corrupt, { useNativeCodec });
    const it = reader.newIterator({ fillCache: false });
    // The offset of a data block well past where the readahead starts.
    const index = reader.newIndexIterator();
    index.first();
    for (let i = 0; i < 100; i++) index.next();
    const victim = { offset: index.handleOffset, size: index.handleSize };
    index.close();
    const fd = fs.openSync(corrupt, 'r+');
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, victim.offset + 3);
    byte[0] ^= 0x40;
    fs.writeSync(fd, byte, 0, 1, victim.offset + 3);
    fs.closeSync(fd);
    try {
      resetPerfContext();
      let error: unknown = null;
      try {
        for (it.first(); it.valid(); it.next());
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CorruptionError);
      expect((error as CorruptionError).file).toBe(corrupt);
      expect((error as CorruptionError).offset).toBe(victim.offset);
      expect(perf.readaheadBlocks).toBeGreaterThan(50);
    } finally {
      it.close();
      reader.close();
    }
  });
});
