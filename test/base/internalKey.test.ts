/**
 * Internal keys (src/base/internalKey.ts): `user_key ‖ u64le((sequence << 8) | type)`, checked
 * byte for byte against a BigInt reference, decoded back (user key, sequence, type, the
 * kMaxSequenceNumber sentinel included), and ordered as RocksDB's internal-key comparator orders
 * them: user key ascending (bytewise), then sequence descending, then type descending.
 */
import {
  compareInternalKeys,
  formatKey,
  isKnownValueType,
  makeInternalKey,
  MAX_ASSIGNABLE_SEQUENCE,
  MAX_SEQUENCE_NUMBER,
  SeekKeyBuilder,
  sequenceOf,
  TRAILER_BYTES,
  typeOf,
  userKeyOf,
  ValueType,
} from '../../src/base/internalKey';
import { mulberry32 } from '../../src/util/random';

const TYPES: readonly number[] = [
  ValueType.Deletion,
  ValueType.Value,
  ValueType.Merge,
  ValueType.SingleDeletion,
  ValueType.RangeDeletion,
  ValueType.Seek,
];

/** The on-disk form, computed independently: user key, then (seq << 8 | type) as a little-endian u64. */
function referenceKey(userKey: Buffer, seq: number, type: number): Buffer {
  const trailer = Buffer.alloc(TRAILER_BYTES);
  const packed = seq >= MAX_SEQUENCE_NUMBER ? (((1n << 56n) - 1n) << 8n) | BigInt(type) : (BigInt(seq) << 8n) | BigInt(type);
  trailer.writeBigUInt64LE(packed);
  return Buffer.concat([userKey, trailer]);
}

interface Parts {
  user: Buffer;
  seq: number;
  type: number;
}

/** The comparator's order, spelled out: user key ascending, sequence descending, type descending. */
function referenceCompare(a: Parts, b: Parts): number {
  const c = Buffer.compare(a.user, b.user);
  if (c !== 0) return c;
  if (a.seq !== b.seq) return a.seq > b.seq ? -1 : 1;
  return b.type - a.type;
}

const SEQUENCES: readonly number[] = [
  0,
  1,
  255,
  256,
  2 ** 24 - 1,
  2 ** 24,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 40 + 12345,
  2 ** 48 - 1,
  MAX_ASSIGNABLE_SEQUENCE - 1,
  MAX_ASSIGNABLE_SEQUENCE,
];

describe('internal key encoding', () => {
  test('is the user key then the little-endian u64 (sequence << 8 | type), for every type and sequence width', () => {
    const user = Buffer.from('user\u0000key\u00ff', 'latin1');
    for (const seq of SEQUENCES) {
      for (const type of TYPES) {
        expect(makeInternalKey(user, seq, type).toString('hex')).toBe(referenceKey(user, seq, type).toString('hex'));
      }
    }
    // The worked example: sequence 0x010203, type Value.
    expect(makeInternalKey(Buffer.from('k'), 0x010203, ValueType.Value).toString('hex')).toBe('6b' + '0103020100000000');
  });

  test('decodes back to the same user key, sequence and type', () => {
    const r = mulberry32(11);
    const cases: Parts[] = [];
    for (const seq of SEQUENCES) cases.push({ user: Buffer.from('a'), seq, type: ValueType.Value });
    for (let i = 0; i < 500; i++) {
      const user = Buffer.from(Array.from({ length: Math.floor(r() * 12) }, () => Math.floor(r() * 256)));
      const seq = r() < 0.5 ? Math.floor(r() * 2 ** 24) : Math.floor(r() * MAX_ASSIGNABLE_SEQUENCE);
      cases.push({ user, seq, type: TYPES[Math.floor(r() * TYPES.length)] });
    }
    for (const c of cases) {
      const ikey = makeInternalKey(c.user, c.seq, c.type);
      expect(ikey.length).toBe(c.user.length + TRAILER_BYTES);
      expect(userKeyOf(ikey).equals(c.user)).toBe(true);
      expect(sequenceOf(ikey)).toBe(c.seq);
      expect(typeOf(ikey)).toBe(c.type);
    }
  });

  test('kMaxSequenceNumber (2^56 - 1) round-trips as the all-ones sequence', () => {
    const ikey = makeInternalKey(Buffer.from('z'), MAX_SEQUENCE_NUMBER, ValueType.Seek);
    expect(ikey.subarray(1).toString('hex')).toBe('16ffffffffffffff');
    expect(sequenceOf(ikey)).toBe(MAX_SEQUENCE_NUMBER);
    expect(typeOf(ikey)).toBe(ValueType.Seek);
    // The largest assignable sequence is not mistaken for the sentinel.
    expect(sequenceOf(makeInternalKey(Buffer.from('z'), MAX_ASSIGNABLE_SEQUENCE, ValueType.Value))).toBe(MAX_ASSIGNABLE_SEQUENCE);
  });

  test('refuses negative and fractional sequence numbers, and user keys of a trailer too short', () => {
    expect(() => makeInternalKey(Buffer.from('a'), -1, ValueType.Value)).toThrow(/non-negative integer/);
    expect(() => makeInternalKey(Buffer.from('a'), 1.5, ValueType.Value)).toThrow(/non-negative integer/);
    expect(() => userKeyOf(Buffer.alloc(TRAILER_BYTES - 1))).toThrow(/shorter than its 8-byte trailer/);
    expect(userKeyOf(Buffer.alloc(TRAILER_BYTES)).length).toBe(0);
  });

  test('knows the value types RocksDB writes to tables, and no others', () => {
    for (const t of TYPES) expect(isKnownValueType(t)).toBe(true);
    for (const t of [0x03, 0x08, 0x10, 0x15, 0x17, 0xff]) expect(isKnownValueType(t)).toBe(false);
  });
});

describe('internal key order', () => {
  test('is user key ascending, then sequence descending, then type descending (randomized)', () => {
    const r = mulberry32(23);
    const users = ['', 'a', 'a\u0000', 'ab', 'b', '\u00ff'].map((s) => Buffer.from(s, 'latin1'));
    const parts: Parts[] = [];
    for (let i = 0; i < 400; i++) {
      const seqs = [0, 1, 255, 256, 2 ** 24, 2 ** 33 + 7, MAX_ASSIGNABLE_SEQUENCE];
      parts.push({
        user: users[Math.floor(r() * users.length)],
        seq: seqs[Math.floor(r() * seqs.length)],
        type: TYPES[Math.floor(r() * TYPES.length)],
      });
    }
    const encoded = parts.map((p) => ({ p, key: makeInternalKey(p.user, p.seq, p.type) }));
    for (let i = 0; i + 1 < encoded.length; i += 2) {
      const a = encoded[i];
      const b = encoded[i + 1];
      expect(Math.sign(compareInternalKeys(a.key, b.key))).toBe(Math.sign(referenceCompare(a.p, b.p)));
      expect(Math.sign(compareInternalKeys(b.key, a.key))).toBe(Math.sign(referenceCompare(b.p, a.p)));
    }
    const sorted = [...encoded].sort((a, b) => compareInternalKeys(a.key, b.key)).map((e) => e.p);
    expect(sorted).toEqual([...parts].sort(referenceCompare));
  });

  test('a key equals only itself; a prefix user key sorts first whatever its sequence', () => {
    const longer = makeInternalKey(Buffer.from('a\u0000', 'latin1'), 5, ValueType.Value);
    expect(compareInternalKeys(longer, Buffer.from(longer))).toBe(0);
    // Whole keys compared bytewise would put "a\0" first (its 0x00 against the trailer's type byte 0x01):
    // the user keys must be compared on their own.
    const prefix = makeInternalKey(Buffer.from('a'), 5, ValueType.Value);
    expect(Buffer.compare(prefix, longer)).toBeGreaterThan(0);
    expect(compareInternalKeys(prefix, longer)).toBeLessThan(0);
    expect(compareInternalKeys(longer, prefix)).toBeGreaterThan(0);
  });

  test("a seek key at kMaxSequenceNumber sorts before every version of its user key, and after the previous user key's", () => {
    const builder = new SeekKeyBuilder();
    const seek = Buffer.from(builder.build(Buffer.from('m'), MAX_SEQUENCE_NUMBER));
    expect(seek.equals(makeInternalKey(Buffer.from('m'), MAX_SEQUENCE_NUMBER, ValueType.Seek))).toBe(true);
    for (const seq of SEQUENCES) {
      for (const type of TYPES) {
        expect(compareInternalKeys(seek, makeInternalKey(Buffer.from('m'), seq, type))).toBeLessThan(0);
        expect(compareInternalKeys(seek, makeInternalKey(Buffer.from('l'), seq, type))).toBeGreaterThan(0);
      }
    }
    // A seek at sequence s lands on the newest version visible at s: after those newer than s.
    const at10 = Buffer.from(builder.build(Buffer.from('m'), 10));
    expect(compareInternalKeys(at10, makeInternalKey(Buffer.from('m'), 11, ValueType.Value))).toBeGreaterThan(0);
    expect(compareInternalKeys(at10, makeInternalKey(Buffer.from('m'), 10, ValueType.Value))).toBeLessThan(0);
  });

  test('the seek key builder reuses its buffer and grows it for long keys', () => {
    const builder = new SeekKeyBuilder();
    const long = Buffer.alloc(200, 0x61);
    const built = builder.build(long, 7);
    expect(built.equals(makeInternalKey(long, 7, ValueType.Seek))).toBe(true);
    const short = builder.build(Buffer.from('x'), 3);
    expect(short.equals(makeInternalKey(Buffer.from('x'), 3, ValueType.Seek))).toBe(true);
    // The same memory (a new allocation would have its own offset or its own ArrayBuffer).
    expect(short.buffer).toBe(built.buffer);
    expect(short.byteOffset).toBe(built.byteOffset);
  });
});

describe('formatKey', () => {
  test('prints printable ASCII as a JSON string and anything else as hex', () => {
    expect(formatKey(Buffer.from('user:42'))).toBe('"user:42"');
    expect(formatKey(Buffer.from('say "hi"'))).toBe('"say \\"hi\\""');
    expect(formatKey(Buffer.from([0x61, 0x00, 0xff]))).toBe('0x6100ff');
    expect(formatKey(Buffer.alloc(0))).toBe('""');
  });
});
