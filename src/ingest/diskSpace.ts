/**
 * Scratch space: what an import writes besides its result (sorted runs, then SSTs), how much it
 * is expected to need, and a full disk turned into a clean, resumable stop.
 *
 * Estimate: runs take about RUN_BYTES_PER_INPUT_BYTE of the CSV's bytes, the SSTs at most
 * SST_BYTES_PER_INPUT_BYTE (uncompressed; LZ4 usually writes less), and a resumable import keeps
 * its runs until the merge is over, so the peak is about the sum. Measured on the bundled TPC-E
 * fixture (docs/import.md, "Scratch space"). Compressed inputs (.gz) and stdin have no estimate.
 *
 * Contract:
 * - `checkScratchSpace` (before parsing, with --disk-quota): fails with NO_SPACE when the
 *   estimate exceeds the quota or the free space of the file systems the runs and SSTs go to.
 * - `ScratchQuota.charge` (as runs and SSTs are finished): fails with NO_SPACE past the quota.
 * - `noSpaceErrorOf(err, ...)`: an ENOSPC or EDQUOT anywhere in an error's chain (or in the
 *   message a worker thread sent back) becomes NO_SPACE naming the directory, the phase and
 *   the bytes still needed; any other error is returned as it is.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestError, isNoSpaceError } from '../util/errors';

export const RUN_BYTES_PER_INPUT_BYTE = 1.1;
export const SST_BYTES_PER_INPUT_BYTE = 1.1;

export function estimateScratchBytes(inputBytes: number): number {
  return Math.ceil(inputBytes * (RUN_BYTES_PER_INPUT_BYTE + SST_BYTES_PER_INPUT_BYTE));
}

/** Free bytes for an unprivileged writer on the file system holding `dir`. */
export function freeBytes(dir: string): number {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

export interface ScratchPlan {
  inputBytes: number;
  /** null: no estimate (stdin or compressed input). */
  estimable: boolean;
  quotaBytes: number;
  runDir: string;
  outputDir: string;
}

export function checkScratchSpace(p: ScratchPlan): void {
  if (!p.estimable) return;
  const runBytes = Math.ceil(p.inputBytes * RUN_BYTES_PER_INPUT_BYTE);
  const sstBytes = Math.ceil(p.inputBytes * SST_BYTES_PER_INPUT_BYTE);
  const need = runBytes + sstBytes;
  if (need > p.quotaBytes) {
    throw new IngestError(
      'NO_SPACE',
      `the import needs about ${mib(need)} MiB of scratch space (runs ${mib(runBytes)} MiB in ${p.runDir}, SSTs ${mib(sstBytes)} MiB ` +
        `in ${p.outputDir}) and --disk-quota is ${mib(p.quotaBytes)} MiB; nothing was written`,
    );
  }
  const sameFs = fs.statSync(p.runDir).dev === fs.statSync(p.outputDir).dev;
  const wants: [string, number][] = sameFs
    ? [[p.outputDir, need]]
    : [
        [p.runDir, runBytes],
        [p.outputDir, sstBytes],
      ];
  for (const [dir, bytes] of wants) {
    const free = freeBytes(dir);
    if (bytes > free)
      throw new IngestError(
        'NO_SPACE',
        `the import needs about ${mib(bytes)} MiB in ${dir} and its file system has ${mib(free)} MiB free; nothing was written`,
      );
  }
}

/** The scratch bytes an import has written so far, against --disk-quota. */
export class ScratchQuota {
  private usedBytes = 0;
  constructor(private readonly quotaBytes: number) {}

  get used(): number {
    return this.usedBytes;
  }

  /** Adds `bytes` just written in `dir`; past the quota, a NO_SPACE error (the import is resumable). */
  charge(bytes: number, dir: string): void {
    this.usedBytes += bytes;
    if (this.usedBytes > this.quotaBytes) {
      throw new IngestError(
        'NO_SPACE',
        `the import's scratch space passed --disk-quota ${mib(this.quotaBytes)} MiB (${mib(this.usedBytes)} MiB written, the last in ${dir}); ` +
          `raise the quota, then run the same command again to resume`,
      );
    }
  }
}

/**
 * The clean stop for a full disk: NO_SPACE naming `dir`, what the import was doing and about how
 * many more bytes it needs; `err` itself when it is not a full disk.
 */
export function noSpaceErrorOf(
  err: unknown,
  dir: string,
  doing: string,
  neededBytes: number | null,
  resumable: boolean,
  unchanged: string,
): unknown {
  if (!isNoSpaceError(err) || told.has(err as object)) return err;
  let free = '';
  try {
    free = `, ${mib(freeBytes(dir))} MiB free now`;
  } catch {
    // The directory is gone or unreadable: say nothing of its free space.
  }
  const need = neededBytes !== null && neededBytes > 0 ? `; about ${mib(neededBytes)} MiB more are needed${free}` : free;
  const then = resumable ? 'free space, then run the same command again to resume' : 'free space and run it again';
  const e = new IngestError('NO_SPACE', `no space left in ${dir} while ${doing}${need}; ${then} (${unchanged})`, { cause: err });
  told.add(e);
  return e;
}

/** NO_SPACE errors that already say what the import was doing (an engine's own NO_SPACE does not). */
const told = new WeakSet<object>();

/** Bytes of the files directly in `dir` whose names start with `prefix` (all with ''). */
export function bytesIn(dir: string, prefix = ''): number {
  let total = 0;
  try {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }))
      if (e.isFile() && e.name.startsWith(prefix)) total += fs.statSync(`${dir}/${e.name}`).size;
  } catch {
    return total;
  }
  return total;
}

function mib(bytes: number): string {
  return (bytes / (1 << 20)).toFixed(1);
}

/** Whether the scratch space of these inputs can be estimated from their sizes (not stdin, not compressed). */
export function estimableInputs(inputs: readonly string[]): boolean {
  return inputs.every((p) => p !== '-' && !p.endsWith('.gz'));
}

/** `dir`, or its nearest ancestor that exists (where it would be made): its file system is the one to ask. */
export function existingAncestor(dir: string): string {
  let d = path.resolve(dir);
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  return d;
}
