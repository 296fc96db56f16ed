/**
 * Fingerprints of an import's inputs and options: what a resumed import must find unchanged.
 *
 * Why: a resume reuses sorted runs and SSTs made from the inputs as they were. If a file was
 * appended to, rewritten or replaced overnight, or an option that shapes the output changed,
 * reusing them would silently load stale or partial data (the class of bug TiDB Lightning's
 * issues 70039 and 70041 describe). So the job records these and a resume compares them first.
 *
 * An input's fingerprint: its resolved path, size, mtime (ms) and the SHA-256 of sampled bytes:
 * the first and last SAMPLE_EDGE_BYTES and SAMPLE_COUNT evenly spaced SAMPLE_BYTES windows in
 * between. Reading about 1 MiB costs milliseconds at any size, and a change to the size or mtime
 * is caught without it; the samples catch a same-size rewrite with a restored mtime in most cases
 * (not a change confined between samples: say so in docs/import.md).
 *
 * The options: a flat record of every option that changes the output (key, value, dialect,
 * duplicates, bad rows, file size, table options, parser), compared field by field, so the
 * refusal names the option. Options that change only speed (memory limit, threads) are left
 * out: a resume may lower --memory-limit after an out-of-memory kill.
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash } from 'crypto';
import { IngestError } from '../../util/errors';

const SAMPLE_EDGE_BYTES = 64 << 10;
const SAMPLE_BYTES = 4 << 10;
const SAMPLE_COUNT = 64;

export interface InputFingerprint {
  /** The name the input goes by in messages. */
  name: string;
  /** Resolved path. */
  path: string;
  sizeBytes: number;
  mtimeMs: number;
  sampleSha256: string;
}

/** Option values as JSON text, by option name (undefined options are left out). */
export type OptionsFingerprint = Record<string, string>;

export function fingerprintInput(file: string, name: string): InputFingerprint {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    throw new IngestError('BAD_INPUT', `cannot read input ${name}: ${(e as Error).message}`, { cause: e });
  }
  try {
    const st = fs.fstatSync(fd);
    const hash = createHash('sha256');
    for (const [offset, length] of sampleWindows(st.size)) hash.update(readAt(fd, offset, length));
    return { name, path: path.resolve(file), sizeBytes: st.size, mtimeMs: Math.floor(st.mtimeMs), sampleSha256: hash.digest('hex') };
  } finally {
    fs.closeSync(fd);
  }
}

/** [offset, length] of every sampled window of a file of `size` bytes, in order, non-overlapping. */
export function sampleWindows(size: number): [number, number][] {
  if (size <= 2 * SAMPLE_EDGE_BYTES + SAMPLE_COUNT * SAMPLE_BYTES) return [[0, size]];
  const windows: [number, number][] = [[0, SAMPLE_EDGE_BYTES]];
  const inner = size - 2 * SAMPLE_EDGE_BYTES;
  const step = Math.floor(inner / SAMPLE_COUNT);
  for (let i = 0; i < SAMPLE_COUNT; i++) windows.push([SAMPLE_EDGE_BYTES + i * step, SAMPLE_BYTES]);
  windows.push([size - SAMPLE_EDGE_BYTES, SAMPLE_EDGE_BYTES]);
  return windows;
}

function readAt(fd: number, offset: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = fs.readSync(fd, buf, got, length - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** What changed between two fingerprints of the same inputs, in words, or null when nothing did. */
export function describeInputChange(before: readonly InputFingerprint[], now: readonly InputFingerprint[]): string | null {
  if (before.length !== now.length) return `the inputs were ${before.length} file(s) and are now ${now.length}`;
  for (let i = 0; i < before.length; i++) {
    const a = before[i];
    const b = now[i];
    if (a.path !== b.path) return `input ${i + 1} was ${a.path} and is now ${b.path}`;
    if (a.sizeBytes !== b.sizeBytes) return `input ${a.name} changed size: ${a.sizeBytes} → ${b.sizeBytes} bytes`;
    if (a.mtimeMs !== b.mtimeMs)
      return `input ${a.name} was modified: mtime ${new Date(a.mtimeMs).toISOString()} → ${new Date(b.mtimeMs).toISOString()}`;
    if (a.sampleSha256 !== b.sampleSha256) return `input ${a.name} changed content (its sampled bytes differ)`;
  }
  return null;
}

/** The first option whose value differs, in words, or null. */
export function describeOptionChange(before: OptionsFingerprint, now: OptionsFingerprint): string | null {
  const names = [...new Set([...Object.keys(before), ...Object.keys(now)])].sort();
  for (const name of names) {
    if (before[name] !== now[name]) return `option ${name} changed: ${before[name] ?? '(unset)'} → ${now[name] ?? '(unset)'}`;
  }
  return null;
}
