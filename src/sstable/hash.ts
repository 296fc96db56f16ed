/**
 * The two non-cryptographic hashes RocksDB 7.8's table format stores the results of.
 *
 * - `hash32`: RocksDB's 32-bit Murmur-like `Hash(data, n, seed)`. Used with seed 0xBC9F1D34 by
 *   the legacy Bloom filter (format_version < 5) and with seed 397 by the data-block hash index.
 *   Tail bytes are SIGN-EXTENDED before being added (RocksDB reads them through `char`, which is
 *   signed on x86-64), so a trailing 0x80 adds 0xFFFFFF80, not 0x80. That quirk is part of the
 *   on-disk format.
 *
 * - `xxph3`: "XXPH3", the XXH3 *preview* from xxHash 0.7.2 (seed 0) that RocksDB froze for
 *   FastLocalBloom filters (format_version 5), plus a RocksDB-specific value for empty input.
 *   It is NOT the released XXH3 (XXPH3("abc") = 0xd39eeb71bb5342e8, XXH3("abc") =
 *   0x78af5f94892f3950), so no npm XXH3 can stand in for it.
 *
 * Contract of `xxph3(data, start, end)`: hashes `data[start, end)` and writes the 64-bit result
 * into the module-level `xxph3Result` as two unsigned 32-bit halves (`lo` = bits 0..31, `hi` =
 * bits 32..63). It returns nothing and allocates nothing: it runs once per key on the SST write
 * path and once per point lookup, so it avoids BigInt and does 64-bit arithmetic on pairs of
 * 32-bit words (see "XXPH3, fast path" below). The result is overwritten by the next call; copy
 * it out before hashing again. test/support/xxph3Reference.ts is a slow BigInt transcription of
 * the same definition, the tests' oracle for the fast one.
 */

const HASH32_M = 0xc6a4a793;

/** Seed of the legacy (format_version < 5) Bloom filter's hash. */
export const LEGACY_BLOOM_HASH_SEED = 0xbc9f1d34;
/** Seed of the data-block hash index's hash. */
export const DATA_BLOCK_HASH_INDEX_SEED = 397;

/** RocksDB `Hash(data + start, end - start, seed)`: a uint32. */
export function hash32(data: Uint8Array, start: number, end: number, seed: number): number {
  const n = end - start;
  let h = (seed ^ Math.imul(n, HASH32_M)) >>> 0;
  let i = start;
  const fullEnd = end - (n % 4);
  for (; i < fullEnd; i += 4) {
    const w = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    h = Math.imul((h + w) | 0, HASH32_M);
    h = (h ^ (h >>> 16)) >>> 0;
  }
  // Tail bytes go through a signed char: (x << 24) >> 24 sign-extends byte x to 32 bits.
  const tailBytes = end - i;
  if (tailBytes > 0) {
    if (tailBytes === 3) h = (h + (((data[i + 2] << 24) >> 24) << 16)) | 0;
    if (tailBytes >= 2) h = (h + (((data[i + 1] << 24) >> 24) << 8)) | 0;
    h = (h + ((data[i] << 24) >> 24)) | 0;
    h = Math.imul(h, HASH32_M);
    h ^= h >>> 24;
  }
  return h >>> 0;
}

// ---------------------------------------------------------------------------------------------
// XXPH3, fast path
//
// Representation: a 64-bit value is a pair of 32-bit words (hi, lo), each held as a SIGNED int32
// (`x | 0`). Node's V8 (no pointer compression) keeps int32 values as small integers, so words
// passed to, returned from or stored by helpers that V8 does not inline are never boxed into heap
// numbers; uint32 values above 2^31 would be. Words are widened with `>>> 0` only where their
// unsigned magnitude matters (double products, carry detection).
// ---------------------------------------------------------------------------------------------

/**
 * Output slot of `xxph3`: the last hash as unsigned 32-bit halves, `lo` = bits 0..31 and `hi` =
 * bits 32..63. Overwritten by every call.
 */
export const xxph3Result = { lo: 0, hi: 0 };

/** The 192-byte default secret (the same bytes as XXH3's kSecret). */
export const XXPH3_SECRET = Buffer.from(
  'b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f' +
    'cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c' +
    '3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8' +
    'a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364' +
    'eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e' +
    '2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e',
  'hex',
);
const SECRET_BYTES = 192;
// Secret offsets of xxHash 0.7.2's layout (its XXH_SECRET_* / XXH3_MIDSIZE_* constants).
/** 129..240 bytes: rounds 8.. read the secret from here, shifted off the 16-byte grid. */
const MIDSIZE_START_OFFSET = 3;
/** 129..240 bytes: the last 16 input bytes meet the secret at 136 - 17. */
const MIDSIZE_LAST_OFFSET = 136 - 17;
/** > 240 bytes: the final, overlapping stripe meets the secret at 192 - 64 - 7. */
const LAST_STRIPE_OFFSET = SECRET_BYTES - 64 - 7;
/** > 240 bytes: the scramble key starts here. */
const SCRAMBLE_OFFSET = SECRET_BYTES - 64;
/** > 240 bytes: the lane merge reads the secret from here. */
const MERGE_OFFSET = 11;

/** Little-endian 32-bit word at byte `pos`, as a signed int32. Callers guarantee 4 bytes. */
function readI32(d: Uint8Array, pos: number): number {
  return d[pos] | (d[pos + 1] << 8) | (d[pos + 2] << 16) | (d[pos + 3] << 24);
}

/**
 * SECRET_WORD[p] = the little-endian 32-bit word of the secret at byte p, for every p. The
 * algorithm reads the secret at odd offsets (3, 11, 119, 121, ...), so a table indexed by byte
 * offset replaces four byte loads with one.
 */
const SECRET_WORD = new Int32Array(SECRET_BYTES - 3);
for (let p = 0; p < SECRET_WORD.length; p++) SECRET_WORD[p] = readI32(XXPH3_SECRET, p);

const S0_LO = SECRET_WORD[0];
const S0_HI = SECRET_WORD[4];
const S8_LO = SECRET_WORD[8];
const S8_HI = SECRET_WORD[12];

const P32_1 = 0x9e3779b1 | 0;
const P32_2 = 0x85ebca77 | 0;
const P32_3 = 0xc2b2ae3d | 0;
const P64_1_HI = 0x9e3779b1 | 0;
const P64_1_LO = 0x85ebca87 | 0;
const P64_2_HI = 0xc2b2ae3d | 0;
const P64_2_LO = 0x27d4eb4f | 0;
const P64_3_HI = 0x165667b1 | 0;
const P64_3_LO = 0x9e3779f9 | 0;
const P64_4_HI = 0x85ebca77 | 0;
const P64_4_LO = 0xc2b2ae63 | 0;
const P64_5_HI = 0x27d4eb2f | 0;
const P64_5_LO = 0x165667c5 | 0;

const TWO_POW_32 = 4294967296;
const TWO_POW_MINUS_32 = 1 / TWO_POW_32;

/** Result slots of the 64-bit helpers below (a typed array: stores are unboxed). */
const R = new Int32Array(2);
const HI = 0;
const LO = 1;

/**
 * (R[HI], R[LO]) = a * b, the full 64-bit product of two 32-bit words (taken as unsigned).
 *
 * The low word is exact from `Math.imul`. The high word comes from the double product: a*b
 * rounded to 53 bits is within 2^11 of the true product P (< 2^64), subtracting the exact low
 * word adds at most another 2^11 of rounding, so (a*b - lo) / 2^32 lies within 2^-20 of the
 * integer high word and rounding to nearest (+0.5, truncate) recovers it exactly.
 */
function mul32to64(a: number, b: number): void {
  const lo = Math.imul(a, b);
  R[LO] = lo;
  R[HI] = (((a >>> 0) * (b >>> 0) - (lo >>> 0)) * TWO_POW_MINUS_32 + 0.5) | 0;
}

/** (R[HI], R[LO]) = (aHi:aLo) * (bHi:bLo) mod 2^64. Int32Array stores wrap the sum mod 2^32. */
function mul64(aHi: number, aLo: number, bHi: number, bLo: number): void {
  mul32to64(aLo, bLo);
  R[HI] = R[HI] + Math.imul(aHi, bLo) + Math.imul(aLo, bHi);
}

/**
 * (R[HI], R[LO]) = low64(a*b) XOR high64(a*b) of the 128-bit product ("mul128_fold64").
 * The four 32x32 partial products are formed inline as in `mul32to64`, kept in locals rather
 * than going through R: this is the hottest function for keys longer than 8 bytes.
 */
function fold64(aHi: number, aLo: number, bHi: number, bLo: number): void {
  const uaHi = aHi >>> 0;
  const uaLo = aLo >>> 0;
  const ubHi = bHi >>> 0;
  const ubLo = bLo >>> 0;
  const llLo = Math.imul(aLo, bLo) >>> 0;
  const llHi = ((uaLo * ubLo - llLo) * TWO_POW_MINUS_32 + 0.5) >>> 0;
  const lhLo = Math.imul(aLo, bHi) >>> 0;
  const lhHi = ((uaLo * ubHi - lhLo) * TWO_POW_MINUS_32 + 0.5) >>> 0;
  const hlLo = Math.imul(aHi, bLo) >>> 0;
  const hlHi = ((uaHi * ubLo - hlLo) * TWO_POW_MINUS_32 + 0.5) >>> 0;
  const hhLo = Math.imul(aHi, bHi) >>> 0;
  const hhHi = ((uaHi * ubHi - hhLo) * TWO_POW_MINUS_32 + 0.5) >>> 0;
  // Add up the 32-bit columns of the 128-bit product; each sum stays below 2^34, exact, and
  // `(sum * 2^-32) >>> 0` is its carry out of the column.
  const s1 = llHi + lhLo + hlLo;
  const s2 = lhHi + hlHi + hhLo + ((s1 * TWO_POW_MINUS_32) >>> 0);
  const w3 = hhHi + ((s2 * TWO_POW_MINUS_32) >>> 0);
  R[LO] = llLo ^ s2; // bitwise ops take both operands mod 2^32
  R[HI] = s1 ^ w3;
}

/** (R[HI], R[LO]) = avalanche(h): h ^= h >> 37; h *= P64_3; h ^= h >> 32. */
function avalanche(hHi: number, hLo: number): void {
  mul64(hHi, hLo ^ (hHi >>> 5), P64_3_HI, P64_3_LO);
  R[LO] = R[LO] ^ R[HI];
}

/** (R[HI], R[LO]) += mix16B(data + pos, secret + secretPos) mod 2^64. */
function addMix16(d: Uint8Array, pos: number, secretPos: number): void {
  const accHi = R[HI];
  const accLo = R[LO];
  fold64(
    readI32(d, pos + 4) ^ SECRET_WORD[secretPos + 4],
    readI32(d, pos) ^ SECRET_WORD[secretPos],
    readI32(d, pos + 12) ^ SECRET_WORD[secretPos + 12],
    readI32(d, pos + 8) ^ SECRET_WORD[secretPos + 8],
  );
  const lo = (accLo >>> 0) + (R[LO] >>> 0);
  R[LO] = lo;
  R[HI] = accHi + R[HI] + (lo > 0xffffffff ? 1 : 0);
}

/** (R[HI], R[LO]) = len * P64_1 (len < 2^53). */
function lenTimesP64_1(len: number): void {
  mul64(Math.floor(len / TWO_POW_32), len | 0, P64_1_HI, P64_1_LO);
}

/** 1..3 bytes: c = d[0] | d[len/2] << 8 | d[len-1] << 16 | len << 24; aval((c ^ s0) * P64_1). */
function hash1to3(d: Uint8Array, start: number, len: number): void {
  const c = d[start] | (d[start + (len >> 1)] << 8) | (d[start + len - 1] << 16) | (len << 24);
  mul64(0, c ^ S0_LO, P64_1_HI, P64_1_LO);
  avalanche(R[HI], R[LO]);
}

/**
 * 4..8 bytes: k = (r32(0) | r32(len-4) << 32) ^ s0; m = len + (k ^ k >> 51) * P32_1;
 * aval((m ^ m >> 47) * P64_2).
 *
 * This is the hash of every 4..8-byte key added to a FastLocalBloom filter, so the three 64-bit
 * multiplications are written out with locals (the 32x32 high word as in `mul32to64`) instead
 * of going through `mul64` and R: it is about a third faster, and R is written once at the end.
 */
function hash4to8(d: Uint8Array, start: number, len: number): void {
  const kHi = readI32(d, start + len - 4) ^ S0_HI;
  const aLo = readI32(d, start) ^ S0_LO ^ (kHi >>> 19); // k >> 51 has only bits 51..63 of k
  // m = (kHi:aLo) * P32_1 + len (mod 2^64)
  const pLo = Math.imul(aLo, P32_1);
  const pHi = ((((aLo >>> 0) * (P32_1 >>> 0) - (pLo >>> 0)) * TWO_POW_MINUS_32 + 0.5) | 0) + Math.imul(kHi, P32_1);
  const mSum = (pLo >>> 0) + len;
  const mHi = (pHi + (mSum > 0xffffffff ? 1 : 0)) | 0;
  const mLo = (mSum | 0) ^ (mHi >>> 15); // m >> 47 has only bits 47..63 of m
  // h = m * P64_2 (mod 2^64)
  const hLo = Math.imul(mLo, P64_2_LO);
  const hHi =
    ((((mLo >>> 0) * (P64_2_LO >>> 0) - (hLo >>> 0)) * TWO_POW_MINUS_32 + 0.5) | 0) + Math.imul(mHi, P64_2_LO) + Math.imul(mLo, P64_2_HI);
  // avalanche: h ^= h >> 37; h *= P64_3; h ^= h >> 32
  const xLo = hLo ^ (hHi >>> 5);
  const rLo = Math.imul(xLo, P64_3_LO);
  const rHi =
    ((((xLo >>> 0) * (P64_3_LO >>> 0) - (rLo >>> 0)) * TWO_POW_MINUS_32 + 0.5) | 0) + Math.imul(hHi, P64_3_LO) + Math.imul(xLo, P64_3_HI);
  R[HI] = rHi;
  R[LO] = rLo ^ rHi;
}

/** 9..16 bytes: lo = r64(0) ^ s0, hi = r64(len-8) ^ s8; aval(len + lo + hi + fold(lo, hi)). */
function hash9to16(d: Uint8Array, start: number, len: number): void {
  const loLo = readI32(d, start) ^ S0_LO;
  const loHi = readI32(d, start + 4) ^ S0_HI;
  const hiLo = readI32(d, start + len - 8) ^ S8_LO;
  const hiHi = readI32(d, start + len - 4) ^ S8_HI;
  fold64(loHi, loLo, hiHi, hiLo);
  const sumLo = len + (loLo >>> 0) + (hiLo >>> 0) + (R[LO] >>> 0); // < 2^34
  avalanche((loHi + hiHi + R[HI] + Math.floor(sumLo / TWO_POW_32)) | 0, sumLo | 0);
}

/**
 * 17..128 bytes: pairs of 16-byte mixes taken from both ends towards the middle; pair i reads
 * data at 16i and len - 16(i+1) with secret offsets 32i and 32i + 16, for i = 0..floor((len-1)/32).
 * (The reference nests the pairs by length; addition mod 2^64 makes the order irrelevant.)
 */
function hash17to128(d: Uint8Array, start: number, len: number): void {
  const end = start + len;
  lenTimesP64_1(len);
  for (let i = (len - 1) >>> 5; i >= 0; i--) {
    addMix16(d, start + 16 * i, 32 * i);
    addMix16(d, end - 16 * (i + 1), 32 * i + 16);
  }
  avalanche(R[HI], R[LO]);
}

/** 129..240 bytes: 8 mixes, avalanche, the remaining 16-byte rounds at shifted secret offsets. */
function hash129to240(d: Uint8Array, start: number, len: number): void {
  lenTimesP64_1(len);
  for (let i = 0; i < 8; i++) addMix16(d, start + 16 * i, 16 * i);
  avalanche(R[HI], R[LO]);
  const rounds = len >>> 4;
  for (let i = 8; i < rounds; i++) addMix16(d, start + 16 * i, 16 * (i - 8) + MIDSIZE_START_OFFSET);
  addMix16(d, start + len - 16, MIDSIZE_LAST_OFFSET);
  avalanche(R[HI], R[LO]);
}

/** Long-input accumulators (8 lanes of 64 bits), reused across calls. */
const ACC_HI = new Int32Array(8);
const ACC_LO = new Int32Array(8);

/** One 64-byte stripe: acc[j] += d_j + low32(k_j) * high32(k_j), where k_j = d_j ^ secret_j. */
function accumulateStripe(d: Uint8Array, pos: number, secretPos: number): void {
  for (let j = 0; j < 8; j++) {
    const dLo = readI32(d, pos + 8 * j);
    const dHi = readI32(d, pos + 8 * j + 4);
    mul32to64(dLo ^ SECRET_WORD[secretPos + 8 * j], dHi ^ SECRET_WORD[secretPos + 8 * j + 4]);
    const lo = (ACC_LO[j] >>> 0) + (dLo >>> 0) + (R[LO] >>> 0); // < 3 * 2^32
    ACC_LO[j] = lo;
    ACC_HI[j] = ACC_HI[j] + dHi + R[HI] + Math.floor(lo / TWO_POW_32);
  }
}

/** acc[j] = ((acc[j] ^ (acc[j] >> 47)) ^ secret[128 + 8j]) * P32_1. */
function scrambleAccumulators(): void {
  for (let j = 0; j < 8; j++) {
    const hi = ACC_HI[j];
    const s = SCRAMBLE_OFFSET + 8 * j;
    mul64(hi ^ SECRET_WORD[s + 4], ACC_LO[j] ^ (hi >>> 15) ^ SECRET_WORD[s], 0, P32_1);
    ACC_HI[j] = R[HI];
    ACC_LO[j] = R[LO];
  }
}

/** More than 240 bytes: 8 accumulator lanes over 64-byte stripes, scrambled every 1 KiB. */
function hashLong(d: Uint8Array, start: number, len: number): void {
  ACC_HI[0] = 0;
  ACC_LO[0] = P32_3;
  ACC_HI[1] = P64_1_HI;
  ACC_LO[1] = P64_1_LO;
  ACC_HI[2] = P64_2_HI;
  ACC_LO[2] = P64_2_LO;
  ACC_HI[3] = P64_3_HI;
  ACC_LO[3] = P64_3_LO;
  ACC_HI[4] = P64_4_HI;
  ACC_LO[4] = P64_4_LO;
  ACC_HI[5] = 0;
  ACC_LO[5] = P32_2;
  ACC_HI[6] = P64_5_HI;
  ACC_LO[6] = P64_5_LO;
  ACC_HI[7] = 0;
  ACC_LO[7] = P32_1;

  // A block is as many 64-byte stripes as the secret allows when advancing 8 bytes per stripe.
  const stripesPerBlock = (SECRET_BYTES - 64) / 8; // 16
  const blockBytes = 64 * stripesPerBlock; // 1024
  const numBlocks = Math.floor(len / blockBytes);
  for (let b = 0; b < numBlocks; b++) {
    const blockStart = start + b * blockBytes;
    for (let t = 0; t < stripesPerBlock; t++) accumulateStripe(d, blockStart + 64 * t, 8 * t);
    scrambleAccumulators();
  }
  const tailStart = start + numBlocks * blockBytes;
  const tailStripes = Math.floor((len - numBlocks * blockBytes) / 64);
  for (let t = 0; t < tailStripes; t++) accumulateStripe(d, tailStart + 64 * t, 8 * t);
  if (len % 64 !== 0) accumulateStripe(d, start + len - 64, LAST_STRIPE_OFFSET);

  // Merge: len * P64_1 + sum over lane pairs of fold(acc[2j] ^ s, acc[2j+1] ^ s').
  lenTimesP64_1(len);
  for (let j = 0; j < 4; j++) {
    const hi = R[HI];
    const lo = R[LO];
    const s = MERGE_OFFSET + 16 * j;
    fold64(
      ACC_HI[2 * j] ^ SECRET_WORD[s + 4],
      ACC_LO[2 * j] ^ SECRET_WORD[s],
      ACC_HI[2 * j + 1] ^ SECRET_WORD[s + 12],
      ACC_LO[2 * j + 1] ^ SECRET_WORD[s + 8],
    );
    const sum = (lo >>> 0) + (R[LO] >>> 0);
    R[LO] = sum;
    R[HI] = hi + R[HI] + (sum > 0xffffffff ? 1 : 0);
  }
  avalanche(R[HI], R[LO]);
}

/**
 * XXPH3 of `data[start, end)`; the result goes to `xxph3Result` (see the module comment).
 * Callers guarantee 0 <= start <= end <= data.length.
 */
export function xxph3(data: Uint8Array, start: number, end: number): void {
  const len = end - start;
  if (len <= 16) {
    if (len > 8) hash9to16(data, start, len);
    else if (len >= 4) hash4to8(data, start, len);
    else if (len > 0) hash1to3(data, start, len);
    // Empty input: RocksDB's own constant, fold(secret[0..8], P64_2) = 0x5342c3010fe1dd04.
    else fold64(S0_HI, S0_LO, P64_2_HI, P64_2_LO);
  } else if (len <= 128) {
    hash17to128(data, start, len);
  } else if (len <= 240) {
    hash129to240(data, start, len);
  } else {
    hashLong(data, start, len);
  }
  xxph3Result.lo = R[LO] >>> 0;
  xxph3Result.hi = R[HI] >>> 0;
}
