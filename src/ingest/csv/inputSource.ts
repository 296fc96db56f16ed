/**
 * Input byte sources for `ingest import`: a regular file, `-` for stdin, or a `.gz` file
 * decompressed on the fly.
 *
 * Contract: `read(buf, offset, length)` fills up to `length` bytes and returns how many (0 only at
 * the end). `consumedBytes()` counts bytes taken from the underlying input (compressed bytes for
 * .gz), and `totalBytes` is that input's size when known, so progress is "consumed of total".
 * Memory: a file source reads straight into the caller's buffer; a stream source holds at most
 * one pending chunk of the stream (64 KiB for files, whatever stdin delivers).
 */
import * as fs from 'fs';
import * as zlib from 'zlib';
import { IngestError } from '../../util/errors';

export interface ByteSource {
  /** The path as the user gave it, or "stdin". */
  readonly name: string;
  readonly totalBytes: number | null;
  read(buf: Buffer, offset: number, length: number): Promise<number>;
  consumedBytes(): number;
  close(): Promise<void>;
}

export function isStdin(path: string): boolean {
  return path === '-';
}

export function isGzip(path: string): boolean {
  return path.endsWith('.gz');
}

/** True when the input is an uncompressed regular file: it can be split into byte ranges. */
export function isSplittable(path: string): boolean {
  if (isStdin(path) || isGzip(path)) return false;
  try {
    return fs.statSync(path).isFile();
  } catch {
    return false;
  }
}

export function displayName(path: string): string {
  return isStdin(path) ? 'stdin' : path;
}

class FileSource implements ByteSource {
  readonly name: string;
  readonly totalBytes: number;
  private position = 0;
  constructor(
    private readonly handle: fs.promises.FileHandle,
    name: string,
    size: number,
  ) {
    this.name = name;
    this.totalBytes = size;
  }
  async read(buf: Buffer, offset: number, length: number): Promise<number> {
    const { bytesRead } = await this.handle.read(buf, offset, length, this.position);
    this.position += bytesRead;
    return bytesRead;
  }
  consumedBytes(): number {
    return this.position;
  }
  async close(): Promise<void> {
    await this.handle.close();
  }
}

class StreamSource implements ByteSource {
  readonly name: string;
  readonly totalBytes: number | null;
  private readonly iterator: AsyncIterator<Buffer>;
  private pending: Buffer | null = null;
  private pendingOffset = 0;
  private done = false;
  private returned = 0;
  constructor(
    stream: NodeJS.ReadableStream,
    name: string,
    totalBytes: number | null,
    /** Bytes taken from the underlying input; null: the bytes this source returned. */
    private readonly consumed: (() => number) | null,
    private readonly onClose: () => void,
  ) {
    this.name = name;
    this.totalBytes = totalBytes;
    this.iterator = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  }
  async read(buf: Buffer, offset: number, length: number): Promise<number> {
    let n = 0;
    while (n < length) {
      if (this.pending === null) {
        if (this.done || n > 0) break; // return what we have rather than wait for more
        let r: IteratorResult<Buffer>;
        try {
          r = await this.iterator.next();
        } catch (e) {
          throw new IngestError('BAD_INPUT', `cannot read ${this.name}: ${(e as Error).message}`, { cause: e });
        }
        if (r.done) {
          this.done = true;
          break;
        }
        this.pending = typeof r.value === 'string' ? Buffer.from(r.value) : r.value;
        this.pendingOffset = 0;
      }
      const p = this.pending;
      const take = Math.min(length - n, p.length - this.pendingOffset);
      p.copy(buf, offset + n, this.pendingOffset, this.pendingOffset + take);
      this.pendingOffset += take;
      n += take;
      if (this.pendingOffset === p.length) this.pending = null;
    }
    this.returned += n;
    return n;
  }
  consumedBytes(): number {
    return this.consumed !== null ? this.consumed() : this.returned;
  }
  async close(): Promise<void> {
    this.onClose();
  }
}

export async function openByteSource(path: string): Promise<ByteSource> {
  if (isStdin(path)) {
    return new StreamSource(process.stdin, 'stdin', null, null, () => undefined);
  }
  let size: number;
  try {
    const st = fs.statSync(path);
    if (st.isDirectory()) throw new Error('is a directory');
    size = st.size;
  } catch (e) {
    throw new IngestError('BAD_INPUT', `cannot read input ${path}: ${(e as Error).message}`, { cause: e });
  }
  if (isGzip(path)) {
    const raw = fs.createReadStream(path, { highWaterMark: 1 << 16 });
    const gunzip = zlib.createGunzip();
    raw.on('error', (e) => gunzip.destroy(e));
    raw.pipe(gunzip);
    return new StreamSource(
      gunzip,
      path,
      size,
      () => raw.bytesRead,
      () => {
        raw.destroy();
        gunzip.destroy();
      },
    );
  }
  let handle: fs.promises.FileHandle;
  try {
    handle = await fs.promises.open(path, 'r');
  } catch (e) {
    throw new IngestError('BAD_INPUT', `cannot open input ${path}: ${(e as Error).message}`, { cause: e });
  }
  return new FileSource(handle, path, size);
}

/** The size of an input file; an input that cannot be read, or a directory, is BAD_INPUT naming it. */
export function statInputSize(p: string): number {
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch (e) {
    throw new IngestError('BAD_INPUT', `cannot read input ${p}: ${(e as Error).message}`, { cause: e });
  }
  if (st.isDirectory()) throw new IngestError('BAD_INPUT', `input ${p} is a directory: give the CSV files in it`);
  return st.size;
}

/**
 * Checks the inputs before anything reads them or is made for them: every one a file that exists
 * (not a directory; `-` is stdin, at most once), none given twice (the same file under two paths
 * included: its rows would all be duplicates). USAGE or BAD_INPUT naming the input. Returns
 * each input's size in bytes (null for stdin).
 */
export function checkInputs(inputs: readonly string[]): (number | null)[] {
  if (inputs.length === 0) throw new IngestError('USAGE', 'import needs at least one input file (or - for stdin)');
  if (inputs.filter((p) => p === '-').length > 1) throw new IngestError('USAGE', 'stdin (-) may be given only once');
  const seen = new Map<string, string>();
  return inputs.map((p) => {
    if (p === '-') return null;
    const size = statInputSize(p);
    const real = fs.realpathSync(p);
    const earlier = seen.get(real);
    if (earlier !== undefined)
      throw new IngestError('USAGE', earlier === p ? `input ${p} is given twice` : `inputs ${earlier} and ${p} are the same file`);
    seen.set(real, p);
    return size;
  });
}
