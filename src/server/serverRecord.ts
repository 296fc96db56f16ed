/**
 * The SERVER file: a running `ingest serve` records its URL beside the database's LOCK, so that a
 * command given `--db DIR` for a directory the server holds can say which server it is and
 * suggest `--server URL` instead of only "locked by pid N".
 *
 * Layout: DIR/SERVER, one JSON object {"url", "pid"} and a newline, written to a temp file and
 * renamed into place after the server listens, removed when it stops. A SIGKILLed server leaves
 * it behind: a reader trusts it only when its pid is the LOCK's holder (DbLockedError.pid), and
 * the next server overwrites it.
 */
import * as fs from 'fs';
import * as path from 'path';

export const SERVER_FILE_NAME = 'SERVER';
const MAX_RECORD_BYTES = 4096;

export interface ServerRecord {
  url: string;
  pid: number;
}

export function serverRecordPath(dir: string): string {
  return path.join(dir, SERVER_FILE_NAME);
}

export function writeServerRecord(dir: string, record: ServerRecord): void {
  const file = serverRecordPath(dir);
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(record)}\n`);
  fs.renameSync(temp, file);
}

/** The record, or null when there is none or it cannot be read as one. */
export function readServerRecord(dir: string): ServerRecord | null {
  try {
    const text = fs.readFileSync(serverRecordPath(dir), 'utf8').slice(0, MAX_RECORD_BYTES);
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { url, pid } = parsed as Record<string, unknown>;
    return typeof url === 'string' && typeof pid === 'number' ? { url, pid } : null;
  } catch {
    return null;
  }
}

/** Removes the record if it is this process's. */
export function removeServerRecord(dir: string): void {
  if (readServerRecord(dir)?.pid === process.pid) fs.rmSync(serverRecordPath(dir), { force: true });
}
