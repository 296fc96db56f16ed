/**
 * The text forms of option values shared by every front end of the import (the CLI's flags, the
 * server's query parameters): sizes, non-negative integers, and counts that may be `all`. One rule each, so `--threads 1e3`
 * and `?threads=1e3` are refused alike (they were taken by one parser and refused by another).
 *
 * Contract: each parser returns the value or throws IngestError('USAGE') naming the option and
 * quoting the text it was given (exit code 2 in the CLI, 400 from the server).
 */
import { IngestError } from '../../util/errors';

/** Unit suffix (lowercase) → bytes: binary for K/M/G/KiB/MiB/GiB, decimal for KB/MB/GB. */
const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1 << 20,
  mb: 1e6,
  mib: 1 << 20,
  g: 1 << 30,
  gb: 1e9,
  gib: 1 << 30,
};

/** "256MiB", "64M", "1g", "4096" → bytes (rounded down). `name` is the option in messages. */
export function parseByteSize(text: string, name: string): number {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m !== null ? SIZE_UNITS[m[2].toLowerCase()] : undefined;
  if (m === null || unit === undefined) throw new IngestError('USAGE', `${name} must be a size like 256MiB, 64M or 4096, got "${text}"`);
  const bytes = Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(bytes)) throw new IngestError('USAGE', `${name} is too large: "${text}"`);
  return bytes;
}

/** Decimal digits only: no sign, exponent, fraction or spaces. */
const DIGITS = /^[0-9]+$/;

/** A parser of a count in decimal digits, or `all` (read as `all`, e.g. Number.MAX_SAFE_INTEGER). */
export function countOrAll(name: string, all: number): (text: string) => number {
  const count = nonNegativeInteger(name);
  return (text: string) => {
    if (text === 'all') return all;
    if (!DIGITS.test(text)) throw new IngestError('USAGE', `${name} must be a non-negative integer or all, got "${text}"`);
    return count(text);
  };
}

/** A parser of a non-negative integer written in decimal digits, within the safe integers. */
export function nonNegativeInteger(name: string): (text: string) => number {
  return (text: string) => {
    const n = Number(text);
    if (!DIGITS.test(text) || !Number.isSafeInteger(n))
      throw new IngestError('USAGE', `${name} must be a non-negative integer, got "${text}"`);
    return n;
  };
}
