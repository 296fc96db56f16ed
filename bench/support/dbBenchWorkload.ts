/**
 * db_bench's workload pieces, shared by the benchmarks that run it (bench/engine-vs-db_bench.ts
 * against db_bench itself, bench/node-peers.ts against the Node stores): its value generator
 * (Park-Miller `Random(301)`, 100-byte pieces whose second half repeats the first, so LZ4 sees
 * the compressibility of `--compression_ratio=0.5`), uniform keys from a seeded xorshift32 stream,
 * and db_bench's 8-byte big-endian key encoding (GenerateKeyFromInt).
 */

/** db_bench's --compression_ratio: the share of each 100-byte value piece that is random. */
export const COMPRESSION_RATIO = 0.5;
/** db_bench's value buffer: at least 1 MiB of 100-byte pieces. */
const VALUE_BUFFER_MIN_BYTES = 1 << 20;
const VALUE_PIECE_BYTES = 100;

/** LevelDB's/RocksDB's `Random`: the Park-Miller generator db_bench builds its values with. */
class ParkMillerRandom {
  private static readonly M = 2147483647; // 2^31 - 1
  private static readonly A = 16807;
  private seed: number;
  constructor(seed: number) {
    this.seed = seed & ParkMillerRandom.M;
    if (this.seed === 0 || this.seed === ParkMillerRandom.M) this.seed = 1;
  }
  next(): number {
    // seed < 2^31 and A < 2^15: the product is below 2^46, exact in a double.
    const product = this.seed * ParkMillerRandom.A;
    let s = Math.floor(product / 2147483648) + (product % 2147483648);
    if (s > ParkMillerRandom.M) s -= ParkMillerRandom.M;
    this.seed = s;
    return s;
  }
  uniform(n: number): number {
    return this.next() % n;
  }
}

/** db_bench's RandomGenerator: a 1 MiB buffer of compressible pieces, handed out in slices. */
export class ValueGenerator {
  private readonly data: Buffer;
  private pos = 0;
  constructor() {
    const rnd = new ParkMillerRandom(301);
    const rawBytes = Math.max(1, Math.floor(VALUE_PIECE_BYTES * COMPRESSION_RATIO));
    const pieces = Math.ceil(VALUE_BUFFER_MIN_BYTES / VALUE_PIECE_BYTES);
    this.data = Buffer.allocUnsafe(pieces * VALUE_PIECE_BYTES);
    for (let p = 0; p < pieces; p++) {
      const start = p * VALUE_PIECE_BYTES;
      // RandomString: printable bytes ' ' + Uniform(95), then repeated to fill the piece.
      for (let i = 0; i < rawBytes; i++) this.data[start + i] = 0x20 + rnd.uniform(95);
      for (let i = rawBytes; i < VALUE_PIECE_BYTES; i++) this.data[start + i] = this.data[start + (i % rawBytes)];
    }
  }
  /** The next `len` bytes (a view; valid until the generator wraps, long after it is used). */
  generate(len: number): Buffer {
    if (this.pos + len > this.data.length) this.pos = 0;
    this.pos += len;
    return this.data.subarray(this.pos - len, this.pos);
  }
}

/** `count` keys uniform in [0, num) from a xorshift32 stream. */
export function randomKeys(count: number, num: number, seed: number): Uint32Array {
  const out = new Uint32Array(count);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x % num;
  }
  return out;
}

/** Key k as db_bench writes 8-byte keys: big-endian. */
export function writeKey(buf: Buffer, k: number): void {
  buf.writeUInt32BE(0, 0); // keys are below 2^32
  buf.writeUInt32BE(k, 4);
}
