/**
 * The running kernel's boot id: what tells a resumable import whether the page cache its sorted
 * runs were written into can still hold them.
 *
 * Contract: `currentBootId()` is the same string for as long as the kernel runs and a different
 * one after any reboot, crash or power loss (Linux: /proc/sys/kernel/random/boot_id, a random
 * UUID drawn at boot). Where there is none it is null, and the job fsyncs its runs as before.
 *
 * Why: a killed process loses nothing it wrote; only the kernel's own end loses written and
 * unsynced pages. So runs written without fsync are exactly as good as fsynced ones to a resume
 * in the same boot, and a resume in another boot must not trust them (importJob.ts).
 */
import * as fs from 'fs';

const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';
/** A boot id is a 36-character UUID; anything else there is not one. */
const BOOT_ID_PATTERN = /^[0-9a-f-]{36}$/;

let cached: string | null | undefined;

export function currentBootId(): string | null {
  if (cached !== undefined) return cached;
  cached = null;
  try {
    const text = fs.readFileSync(BOOT_ID_FILE, 'utf8').trim();
    if (BOOT_ID_PATTERN.test(text)) cached = text;
  } catch {
    // Not Linux, or no procfs: runs are fsynced.
  }
  return cached;
}
