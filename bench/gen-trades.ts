/**
 * gen-trades: a deterministic TPC-E-like TRADE table as pipe-delimited CSV, any number of rows.
 *
 * Columns (TPC-E TRADE): t_id | t_dts | t_st_id | t_tt_id | t_is_cash | t_s_symb | t_qty |
 * t_bid_price | t_ca_id | t_exec_name | t_trade_price | t_chrg | t_comm | t_tax | t_lifo,
 * with a header line naming them (omit it with --no-header). t_id is unique and in random order:
 * 200000000000001 + a permutation of 0..rows-1 (a full-period LCG over the next power of two,
 * skipping values >= rows), so the key column exercises the sort. Same rows + seed = same bytes.
 *
 * Usage: node dist/bench/gen-trades.js --rows N [--seed S] [--no-header] [--out FILE|-]
 */
import * as fs from 'fs';
import { mulberry32 } from '../src/util/random';

export const TRADE_COLUMNS = [
  't_id',
  't_dts',
  't_st_id',
  't_tt_id',
  't_is_cash',
  't_s_symb',
  't_qty',
  't_bid_price',
  't_ca_id',
  't_exec_name',
  't_trade_price',
  't_chrg',
  't_comm',
  't_tax',
  't_lifo',
];
export const FIRST_TRADE_ID = 200000000000001;

const STATUS = ['CMPT', 'CMPT', 'CMPT', 'CMPT', 'PNDG', 'SBMT', 'CNCL', 'ACTV'];
const TYPES = ['TMB', 'TMS', 'TLB', 'TLS', 'TSL'];
const FIRST = ['Albert', 'Betty', 'Carlos', 'Dana', 'Edgar', 'Fiona', 'Gustav', 'Helen', 'Ivan', 'Julia', 'Kenji', 'Laura'];
const LAST = ['Adams', 'Baker', 'Chen', 'Dubois', 'Evans', 'Fischer', 'Garcia', 'Hughes', 'Ito', 'Jensen', 'Kowalski', 'Lopez'];
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const WRITE_CHUNK_BYTES = 4 << 20;

const prng = mulberry32;

/** Yields 0..n-1 each once, in a scrambled order (LCG mod 2^k, full period, cycle-walking). */
export function* permutation(n: number, seed: number): Generator<number> {
  let m = 1;
  while (m < n) m *= 2;
  // x' = (a x + c) mod m has full period when c is odd and a = 1 (mod 4).
  const a = 4 * (Math.floor(seed * 2654435761) % Math.max(1, m / 4)) + 1;
  const c = 2 * (seed % Math.max(1, m / 2)) + 1;
  let x = seed % m;
  let emitted = 0;
  while (emitted < n) {
    // (a * x) can exceed 2^53 for big m: split the multiplication.
    x = (mulMod(a, x, m) + c) % m;
    if (x < n) {
      emitted++;
      yield x;
    }
  }
}

function mulMod(a: number, b: number, m: number): number {
  if (a * b < Number.MAX_SAFE_INTEGER) return (a * b) % m;
  return Number((BigInt(a) * BigInt(b)) % BigInt(m));
}

function money(r: () => number, lo: number, hi: number): string {
  return (lo + r() * (hi - lo)).toFixed(2);
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/**
 * Writes `rows` trade rows to `fd`; returns the bytes written. Their t_id are firstTradeId + a
 * permutation of 0..rows-1 (another firstTradeId shifts the key range, e.g. for a second load).
 */
export function writeTrades(fd: number, rows: number, seed = 42, header = true, firstTradeId = FIRST_TRADE_ID): number {
  const r = prng(seed);
  let chunk = header ? `${TRADE_COLUMNS.join('|')}\n` : '';
  let bytes = 0;
  const flush = (): void => {
    const b = Buffer.from(chunk, 'latin1');
    fs.writeSync(fd, b);
    bytes += b.length;
    chunk = '';
  };
  const start = Date.UTC(2005, 0, 3, 9, 0, 0);
  for (const p of permutation(rows, seed)) {
    const t = new Date(start + Math.floor(r() * 86400 * 365 * 1000));
    const dts = `${t.getUTCFullYear()}-${pad2(t.getUTCMonth() + 1)}-${pad2(t.getUTCDate())} ${pad2(t.getUTCHours())}:${pad2(t.getUTCMinutes())}:${pad2(t.getUTCSeconds())}.${String(t.getUTCMilliseconds()).padStart(3, '0')}`;
    let symb = '';
    const symbLength = 2 + Math.floor(r() * 4);
    for (let i = 0; i < symbLength; i++) symb += LETTERS[Math.floor(r() * 26)];
    const qty = 100 * (1 + Math.floor(r() * 8));
    const bid = money(r, 20, 30);
    const traded = r() < 0.9 ? money(r, 20, 30) : '';
    chunk += `${firstTradeId + p}|${dts}|${STATUS[Math.floor(r() * STATUS.length)]}|${TYPES[Math.floor(r() * TYPES.length)]}|${r() < 0.8 ? 1 : 0}|${symb}|${qty}|${bid}|${43000000001 + Math.floor(r() * 5000)}|${FIRST[Math.floor(r() * FIRST.length)]} ${LAST[Math.floor(r() * LAST.length)]}|${traded}|${money(r, 0, 10)}|${money(r, 0, 20)}|${money(r, 0, 15)}|${r() < 0.5 ? 1 : 0}\n`;
    if (chunk.length >= WRITE_CHUNK_BYTES) flush();
  }
  flush();
  return bytes;
}

function main(argv: string[]): void {
  let rows = 10000;
  let seed = 42;
  let header = true;
  let out = '-';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rows') rows = Number(argv[++i]);
    else if (a === '--seed') seed = Number(argv[++i]);
    else if (a === '--no-header') header = false;
    else if (a === '--out') out = argv[++i];
    else {
      process.stderr.write(`gen-trades: unknown argument ${a}\nusage: gen-trades --rows N [--seed S] [--no-header] [--out FILE|-]\n`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(rows) || rows < 0 || !Number.isInteger(seed) || seed < 0) {
    process.stderr.write('gen-trades: --rows and --seed must be non-negative integers\n');
    process.exit(2);
  }
  const fd = out === '-' ? 1 : fs.openSync(out, 'w');
  writeTrades(fd, rows, seed, header);
  if (out !== '-') fs.closeSync(fd);
}

if (require.main === module) main(process.argv.slice(2));
