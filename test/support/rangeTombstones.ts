/**
 * Range tombstones for tests: a dense key universe where starts and ends collide often, random
 * tombstones over it (overlapping, nested, equal starts, some empty), and the brute-force model of
 * which sequence numbers cover a key. Shared by test/base/fragmenter.test.ts and
 * test/engine/rangedel/rangedel.test.ts.
 */
import { RangeTombstone } from '../../src/base/fragmenter';

/** A key from latin1 text. */
export const k = (s: string): Buffer => Buffer.from(s, 'latin1');

export const cmp = (a: Buffer, b: Buffer): number => Buffer.compare(a, b);

/** Every key over 'a'..'d' of length 0..3, sorted: a dense universe where starts collide often. */
export const UNIVERSE: Buffer[] = (() => {
  const out: string[] = [''];
  let layer = [''];
  for (let len = 1; len <= 3; len++) {
    const next: string[] = [];
    for (const p of layer) for (const c of 'abcd') next.push(p + c);
    out.push(...next);
    layer = next;
  }
  return out.map(k).sort(cmp);
})();

export function randomKey(r: () => number): Buffer {
  return UNIVERSE[Math.floor(r() * UNIVERSE.length)];
}

/** Random tombstones: overlapping, nested, equal starts, some empty (start >= end). */
export function randomTombstones(r: () => number, n: number, maxSeq: number): RangeTombstone[] {
  const out: RangeTombstone[] = [];
  for (let i = 0; i < n; i++) {
    let start = randomKey(r);
    let end = randomKey(r);
    if (r() < 0.85 && cmp(start, end) > 0) [start, end] = [end, start];
    // Reuse an earlier tombstone's start or end now and then: equal starts, touching ranges.
    if (out.length > 0 && r() < 0.2) start = Buffer.from(out[Math.floor(r() * out.length)].start);
    if (out.length > 0 && r() < 0.1) end = Buffer.from(out[Math.floor(r() * out.length)].end);
    out.push({ start, end, seq: 1 + Math.floor(r() * maxSeq) });
  }
  return out;
}

/** The model's distinct covering seqs of key, descending. */
export function modelSeqs(ts: readonly RangeTombstone[], key: Buffer): number[] {
  const s = new Set<number>();
  for (const t of ts) if (cmp(t.start, key) <= 0 && cmp(key, t.end) < 0) s.add(t.seq);
  return [...s].sort((a, b) => b - a);
}

/** Keys to probe: the universe plus one-byte extensions of random members (between universe keys). */
export function probeKeys(r: () => number): Buffer[] {
  const out = [...UNIVERSE];
  for (let i = 0; i < 40; i++) out.push(Buffer.concat([randomKey(r), k(r() < 0.5 ? '\x00' : 'z')]));
  return out.sort(cmp);
}
