/**
 * Reads logical records back from a log file (see logFormat.ts for the layout).
 *
 * Contract:
 * - `readRecord()` returns the next logical record, or null at the end. The returned Buffer is a
 *   view that stays valid only until the next call; copy it to keep it.
 * - Damage is classified by what follows it. When a physical record fails (short header or
 *   payload, checksum mismatch, impossible length or type, a fragment out of sequence), the
 *   reader looks for any intact physical record after the damage: in the rest of the same block
 *   when the damaged header's length is usable, and at the start of every later block (each
 *   block boundary starts a fresh header). If none exists, the damage is a torn tail: a write
 *   that never completed, and therefore was never acknowledged as durable. The reader drops it,
 *   reports it in `droppedTail`, and ends. If an intact record follows, acknowledged data may be
 *   lost, so the reader throws a CorruptionError naming the file and the offset of the damage.
 * - Memory is bounded: one 32 KiB block buffer plus the record being assembled, which may not
 *   exceed MAX_LOGICAL_RECORD_BYTES.
 */
import * as fs from 'fs';
import { ByteSink } from '../../util/coding';
import { CorruptionError, IngestError } from '../../util/errors';
import { LOG_BLOCK_SIZE_BYTES, LOG_HEADER_BYTES, LogRecordType, MAX_LOGICAL_RECORD_BYTES, recordChecksum } from './logFormat';

export interface DroppedTail {
  /** File offset of the first damaged byte that was dropped. */
  offset: number;
  reason: string;
  /** Bytes from `offset` to the end of the file. */
  droppedBytes: number;
}

/** Outcome of reading one physical record. */
const enum Physical {
  Ok,
  Eof,
  Bad,
}

export class LogReader {
  readonly path: string;
  private fd: number;
  private readonly fileSizeBytes: number;
  private readonly block: Buffer = Buffer.allocUnsafe(LOG_BLOCK_SIZE_BYTES);
  /** File offset of `block[0]`, and how many bytes of it were read. */
  private blockFileOffset = 0;
  private blockLength = 0;
  /** Read position inside `block`. */
  private blockPos = 0;
  private blockLoaded = false;
  private readonly assembly = new ByteSink(64 * 1024, MAX_LOGICAL_RECORD_BYTES);

  // Results of the last physical read.
  private physType = 0;
  private physStart = 0;
  private physLength = 0;
  private physOffset = 0;
  private badReason = '';
  private badOffset = 0;
  /** Where to resume looking for an intact record after a bad one, or -1 for the next block. */
  private badResumeOffset = -1;

  private finished = false;
  /** File offset of the first fragment of the record last returned. */
  lastRecordOffset = -1;
  droppedTail: DroppedTail | null = null;

  private constructor(path: string, fd: number, fileSizeBytes: number) {
    this.path = path;
    this.fd = fd;
    this.fileSizeBytes = fileSizeBytes;
  }

  static open(path: string): LogReader {
    let fd: number;
    try {
      fd = fs.openSync(path, 'r');
    } catch (err) {
      throw new IngestError('IO', `cannot open log file ${path}: ${(err as Error).message}`, { cause: err });
    }
    return new LogReader(path, fd, fs.fstatSync(fd).size);
  }

  /** Reads every record of a log, handing each (as a view) to `visit`. */
  static forEachRecord(path: string, visit: (record: Buffer, offset: number) => void): LogReader {
    const reader = LogReader.open(path);
    try {
      for (let r = reader.readRecord(); r !== null; r = reader.readRecord()) visit(r, reader.lastRecordOffset);
    } finally {
      reader.close();
    }
    return reader;
  }

  close(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }

  readRecord(): Buffer | null {
    if (this.finished) return null;
    let inFragmentedRecord = false;
    let recordOffset = 0;
    this.assembly.clear();
    for (;;) {
      const outcome = this.readPhysical();
      if (outcome === Physical.Eof) {
        // A record whose LAST fragment never made it is a torn tail by definition.
        if (inFragmentedRecord) this.dropTail(recordOffset, 'record ends before its last fragment');
        this.finished = true;
        return null;
      }
      if (outcome === Physical.Bad) {
        this.handleDamage(inFragmentedRecord ? recordOffset : this.badOffset, this.badReason, this.badResumeOffset);
        return null;
      }
      const type = this.physType as LogRecordType;
      switch (type) {
        case LogRecordType.Full:
          if (inFragmentedRecord) return this.outOfSequence(recordOffset, 'fragmented record interrupted by a full record');
          this.lastRecordOffset = this.physOffset;
          return this.block.subarray(this.physStart, this.physStart + this.physLength);
        case LogRecordType.First:
          if (inFragmentedRecord) return this.outOfSequence(recordOffset, 'fragmented record interrupted by a new first fragment');
          inFragmentedRecord = true;
          recordOffset = this.physOffset;
          this.appendFragment(recordOffset);
          break;
        case LogRecordType.Middle:
        case LogRecordType.Last:
          if (!inFragmentedRecord) return this.outOfSequence(this.physOffset, 'continuation fragment without a first fragment');
          this.appendFragment(recordOffset);
          if (type === LogRecordType.Last) {
            this.lastRecordOffset = recordOffset;
            return this.assembly.view();
          }
          break;
        default:
          // readPhysical only returns Ok for the four record types above.
          throw new Error(`assertion failed: unexpected log record type ${type}`);
      }
    }
  }

  private appendFragment(recordOffset: number): void {
    if (this.assembly.length + this.physLength > MAX_LOGICAL_RECORD_BYTES) {
      throw new CorruptionError(this.path, recordOffset, `record grows past ${MAX_LOGICAL_RECORD_BYTES} bytes`);
    }
    this.assembly.putBytes(this.block, this.physStart, this.physStart + this.physLength);
  }

  /** An intact physical record that does not fit the fragment sequence: always mid-log damage. */
  private outOfSequence(offset: number, reason: string): null {
    throw new CorruptionError(this.path, offset, reason);
  }

  private handleDamage(offset: number, reason: string, resumeOffset: number): void {
    this.finished = true;
    const scanFrom = resumeOffset >= 0 ? resumeOffset : this.nextBlockStart(this.badOffset);
    const intact = this.findIntactRecord(scanFrom);
    if (intact >= 0) {
      throw new CorruptionError(this.path, offset, `${reason}; an intact record follows at offset ${intact}`);
    }
    this.dropTail(offset, reason);
  }

  private dropTail(offset: number, reason: string): void {
    this.droppedTail = { offset, reason, droppedBytes: this.fileSizeBytes - offset };
  }

  private nextBlockStart(offset: number): number {
    return (Math.floor(offset / LOG_BLOCK_SIZE_BYTES) + 1) * LOG_BLOCK_SIZE_BYTES;
  }

  private loadBlock(fileOffset: number, into: Buffer): number {
    const want = Math.min(LOG_BLOCK_SIZE_BYTES, this.fileSizeBytes - fileOffset);
    let got = 0;
    while (got < want) {
      const n = fs.readSync(this.fd, into, got, want - got, fileOffset + got);
      if (n === 0) break;
      got += n;
    }
    return got;
  }

  /**
   * Reads the next physical record into the phys* fields. Bad sets badReason/badOffset and
   * badResumeOffset (where an intact record could start if the damaged header's length is
   * trustworthy enough to skip, else -1).
   */
  private readPhysical(): Physical {
    for (;;) {
      if (this.blockLength - this.blockPos < LOG_HEADER_BYTES) {
        const trailing = this.blockLength - this.blockPos;
        // Bytes too few for a header at the end of a full block are the writer's zero padding;
        // in the file's last, short block they are a header cut off mid-write.
        if (this.blockLoaded && this.blockLength < LOG_BLOCK_SIZE_BYTES) {
          if (trailing > 0) return this.bad(this.blockFileOffset + this.blockPos, 'truncated record header', -1);
          return Physical.Eof;
        }
        const nextBlock = this.blockLoaded ? this.blockFileOffset + LOG_BLOCK_SIZE_BYTES : 0;
        if (nextBlock >= this.fileSizeBytes) return Physical.Eof;
        this.blockFileOffset = nextBlock;
        this.blockLength = this.loadBlock(nextBlock, this.block);
        this.blockPos = 0;
        this.blockLoaded = true;
        continue;
      }
      const pos = this.blockPos;
      const offset = this.blockFileOffset + pos;
      const storedCrc = this.block.readUInt32LE(pos);
      const length = this.block.readUInt16LE(pos + 4);
      const type = this.block[pos + 6];
      const end = pos + LOG_HEADER_BYTES + length;
      if (type === LogRecordType.Zero && length === 0 && storedCrc === 0) {
        return this.bad(offset, 'zero-filled record header', -1);
      }
      if (end > this.blockLength) {
        const reason = this.blockLength < LOG_BLOCK_SIZE_BYTES ? 'truncated record payload' : `record length ${length} runs past its block`;
        return this.bad(offset, reason, -1);
      }
      this.blockPos = end;
      if (type < LogRecordType.Full || type > LogRecordType.Last) {
        return this.bad(offset, `unknown record type ${type}`, this.blockFileOffset + end);
      }
      if (recordChecksum(type, this.block, pos + LOG_HEADER_BYTES, end) !== storedCrc) {
        return this.bad(offset, 'checksum mismatch', this.blockFileOffset + end);
      }
      this.physType = type;
      this.physStart = pos + LOG_HEADER_BYTES;
      this.physLength = length;
      this.physOffset = offset;
      return Physical.Ok;
    }
  }

  private bad(offset: number, reason: string, resumeOffset: number): Physical {
    this.badOffset = offset;
    this.badReason = reason;
    this.badResumeOffset = resumeOffset;
    return Physical.Bad;
  }

  /**
   * Returns the offset of the first intact physical record at or after `from`, walking the
   * chain of headers inside `from`'s block and then the first header of every later block;
   * -1 if there is none. Used only on the damage path, so it reads with its own buffer.
   */
  private findIntactRecord(from: number): number {
    const buf = Buffer.allocUnsafe(LOG_BLOCK_SIZE_BYTES);
    let blockStart = Math.floor(from / LOG_BLOCK_SIZE_BYTES) * LOG_BLOCK_SIZE_BYTES;
    let pos = from - blockStart;
    while (blockStart < this.fileSizeBytes) {
      const len = this.loadBlock(blockStart, buf);
      while (len - pos >= LOG_HEADER_BYTES) {
        const length = buf.readUInt16LE(pos + 4);
        const type = buf[pos + 6];
        const end = pos + LOG_HEADER_BYTES + length;
        if (type < LogRecordType.Full || type > LogRecordType.Last || end > len) break;
        if (recordChecksum(type, buf, pos + LOG_HEADER_BYTES, end) === buf.readUInt32LE(pos)) return blockStart + pos;
        break;
      }
      blockStart += LOG_BLOCK_SIZE_BYTES;
      pos = 0;
    }
    return -1;
  }
}
