/**
 * Scratch directories: where a process prepares files to ingest, inside the database directory.
 *
 * Why inside: ingestion hard-links its files into the database, which needs the same file system.
 * Why not under the LOCK: an importer parses and sorts its input (the long part) before it opens
 * the database, so that bad input never touches it and other openers are not locked out meanwhile.
 * Several importers may therefore be preparing at once, each in its own scratch directory, while
 * a third process has the database open.
 *
 * Contract: a scratch directory is named for its owner, `.import-tmp-<pid>-<start time>-XXXXXX`
 * (fileNames.ts), is created by that owner only, and is deleted by the owner when it is done
 * (whether or not it ingested). An owner killed before that (SIGKILL, power loss) leaves it
 * behind; Engine.open removes every scratch directory whose owner is no longer running (pid gone,
 * or reused by a process with another start time: lockFile.ts decides), and keeps the others: a
 * live owner may still be parsing into it. Removing a dead owner's directory is always safe: the
 * files it ingested are hard-linked under their table names, and a half-done ingestion's own
 * links are obsolete tables that open deletes anyway.
 *
 * Directories named `.import-tmp-XXXXXX` without an owner (older importers) are left alone: no
 * one can tell whether their owner still runs.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ioError } from './durableFs';
import { parseScratchDirName, scratchDirPrefix } from './fileNames';
import { ownStartTime, processIsAlive } from './lockFile';

/** The mkdtemp prefix for a scratch directory of this process in `dir`. */
export function ownScratchDirPrefix(dir: string): string {
  return scratchDirPrefix(dir, { pid: process.pid, startTime: ownStartTime });
}

/**
 * Removes the scratch directories among `names` (base names in `dir`) whose owner is not running;
 * returns how many. This process's own are kept (it is running). Call with the LOCK held.
 */
export function removeAbandonedScratchDirs(dir: string, names: readonly string[]): number {
  let removed = 0;
  for (const name of names) {
    const owner = parseScratchDirName(name);
    if (owner === null || processIsAlive(owner.pid, owner.startTime)) continue;
    const scratch = path.join(dir, name);
    try {
      fs.rmSync(scratch, { recursive: true, force: true });
    } catch (err) {
      throw ioError('cannot remove abandoned scratch directory', scratch, err);
    }
    removed++;
  }
  return removed;
}
