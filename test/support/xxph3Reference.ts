/**
 * The tests' oracle for XXPH3 (src/sstable/hash.ts's `xxph3`, the filter's key hash, and its
 * native twin native/xxph3.c): a straight BigInt transcription of the definition, slow and
 * allocating, written for reading rather than speed. It lives with the tests because nothing
 * else may call it.
 */
import { XXPH3_SECRET } from '../../src/sstable/hash';

function readI32(d: Uint8Array, pos: number): number {
  return d[pos] | (d[pos + 1] << 8) | (d[pos + 2] << 16) | (d[pos + 3] << 24);
}

// ---------------------------------------------------------------------------------------------
// XXPH3, BigInt reference (slow, allocates)
// ---------------------------------------------------------------------------------------------

const MASK64 = (1n << 64n) - 1n;

function ref32(d: Uint8Array, pos: number): number {
  return readI32(d, pos) >>> 0;
}

function ref64(d: Uint8Array, pos: number): bigint {
  let v = 0n;
  for (let i = 7; i >= 0; i--) v = (v << 8n) | BigInt(d[pos + i]);
  return v;
}

function refFold(a: bigint, b: bigint): bigint {
  const p = a * b;
  return (p & MASK64) ^ (p >> 64n);
}

function refAvalanche(h: bigint): bigint {
  h ^= h >> 37n;
  h = (h * 0x165667b19e3779f9n) & MASK64;
  return h ^ (h >> 32n);
}

/** Straight BigInt transcription of the XXPH3 definition (spec 11.5). */
export function xxph3Reference(d: Uint8Array): bigint {
  const S = XXPH3_SECRET;
  const L = d.length;
  const Lb = BigInt(L);
  const P64_1 = 0x9e3779b185ebca87n;
  const P64_2 = 0xc2b2ae3d27d4eb4fn;
  const mix = (i: number, s: number): bigint => refFold(ref64(d, i) ^ ref64(S, s), ref64(d, i + 8) ^ ref64(S, s + 8));
  if (L === 0) return refFold(ref64(S, 0), P64_2);
  if (L <= 3) {
    const c = BigInt((d[0] | (d[L >> 1] << 8) | (d[L - 1] << 16) | (L << 24)) >>> 0);
    return refAvalanche(((c ^ BigInt(ref32(S, 0))) * P64_1) & MASK64);
  }
  if (L <= 8) {
    const x = BigInt(ref32(d, 0)) | (BigInt(ref32(d, L - 4)) << 32n);
    const k = x ^ ref64(S, 0);
    const m = (Lb + (k ^ (k >> 51n)) * 0x9e3779b1n) & MASK64;
    return refAvalanche(((m ^ (m >> 47n)) * P64_2) & MASK64);
  }
  if (L <= 16) {
    const lo = ref64(d, 0) ^ ref64(S, 0);
    const hi = ref64(d, L - 8) ^ ref64(S, 8);
    return refAvalanche((Lb + lo + hi + refFold(lo, hi)) & MASK64);
  }
  if (L <= 128) {
    let a = Lb * P64_1;
    if (L > 32) {
      if (L > 64) {
        if (L > 96) a += mix(48, 96) + mix(L - 64, 112);
        a += mix(32, 64) + mix(L - 48, 80);
      }
      a += mix(16, 32) + mix(L - 32, 48);
    }
    a += mix(0, 0) + mix(L - 16, 16);
    return refAvalanche(a & MASK64);
  }
  if (L <= 240) {
    let a = Lb * P64_1;
    for (let i = 0; i < 8; i++) a += mix(16 * i, 16 * i);
    a = refAvalanche(a & MASK64);
    for (let i = 8; i < Math.floor(L / 16); i++) a += mix(16 * i, 16 * (i - 8) + 3);
    a += mix(L - 16, 119);
    return refAvalanche(a & MASK64);
  }
  const acc = [0xc2b2ae3dn, P64_1, P64_2, 0x165667b19e3779f9n, 0x85ebca77c2b2ae63n, 0x85ebca77n, 0x27d4eb2f165667c5n, 0x9e3779b1n];
  const stripe = (i: number, s: number): void => {
    for (let j = 0; j < 8; j++) {
      const dv = ref64(d, i + 8 * j);
      const k = dv ^ ref64(S, s + 8 * j);
      acc[j] = (acc[j] + dv + (k & 0xffffffffn) * (k >> 32n)) & MASK64;
    }
  };
  const scramble = (): void => {
    for (let j = 0; j < 8; j++) {
      let a = acc[j];
      a ^= a >> 47n;
      a ^= ref64(S, 128 + 8 * j);
      acc[j] = (a * 0x9e3779b1n) & MASK64;
    }
  };
  const nb = Math.floor(L / 1024);
  for (let b = 0; b < nb; b++) {
    for (let t = 0; t < 16; t++) stripe(1024 * b + 64 * t, 8 * t);
    scramble();
  }
  for (let t = 0; t < Math.floor((L - 1024 * nb) / 64); t++) stripe(1024 * nb + 64 * t, 8 * t);
  if (L % 64 !== 0) stripe(L - 64, 121);
  let r = Lb * P64_1;
  for (let j = 0; j < 4; j++) r += refFold(acc[2 * j] ^ ref64(S, 11 + 16 * j), acc[2 * j + 1] ^ ref64(S, 19 + 16 * j));
  return refAvalanche(r & MASK64);
}
