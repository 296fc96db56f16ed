/**
 * Which failures end a resumable job and which leave it for a resume.
 *
 * A failure a rerun of the same command would meet again (bad input past --max-bad-rows,
 * duplicate keys under --on-duplicate error, a usage error, a key the writer refused) ends the
 * job: its files go, since resuming could only fail the same way. Anything else (a signal, an
 * I/O error, a full disk, a crash, a bug) leaves the job as its last checkpoint says.
 */
import { IngestError } from '../../util/errors';

const DEFINITIVE_CODES: ReadonlySet<string> = new Set(['BAD_INPUT', 'DUPLICATE_KEY', 'USAGE', 'INVALID_ARGUMENT', 'KEY_ORDER']);

export function isDefinitiveFailure(err: unknown): boolean {
  return err instanceof IngestError && DEFINITIVE_CODES.has(err.code);
}
