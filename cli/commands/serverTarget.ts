/**
 * `--db DIR` or `--server URL [--token-file F]`: where a database command or an import goes.
 * Exactly one of the two (both, or neither, is a usage error, exit 2). With --server the command
 * runs as a client of `ingest serve` (cli/serverClient.ts) and prints what it would with --db.
 */
import { IngestError } from '../../src/util/errors';
import { onFirstUse } from '../../src/util/onFirstUse';
import type { ServerClient } from '../serverClient';
import { readTokenFile } from '../../src/server/auth';
import { OptionDef } from '../../src/ingest/options/optionTable';

/**
 * The client side of --server (the HTTP client, the uploads, their report printing: about 30 ms
 * of modules at start-up) loads only when a command runs with --server: every command pays its
 * modules' load before it does anything, and a nightly `ingest import --db` never needs these.
 */
const clientModule = onFirstUse(() => require('../serverClient') as typeof import('../serverClient'));

export interface TargetOptions {
  db?: string;
  server?: string;
  tokenFile?: string;
}

export const SERVER_OPTIONS: readonly OptionDef[] = [
  { flags: '--server <url>', description: 'run against the `ingest serve` at this URL instead of --db' },
  { flags: '--token-file <file>', description: "with --server: the server's token (first line)" },
];

/** The --db directory, or null when the command goes to --server. */
export function dbDirOf(o: TargetOptions, command: string): string | null {
  if (o.db !== undefined && o.server !== undefined) throw new IngestError('USAGE', `${command}: give --db or --server, not both`);
  if (o.db === undefined && o.server === undefined) throw new IngestError('USAGE', `${command}: --db DIR or --server URL is required`);
  if (o.server === undefined && o.tokenFile !== undefined) throw new IngestError('USAGE', `${command}: --token-file goes with --server`);
  return o.db ?? null;
}

/** Runs `body` with a client of --server, closed afterwards. */
export async function withServer<T>(o: TargetOptions, body: (client: ServerClient) => Promise<T>): Promise<T> {
  const client = new (clientModule().ServerClient)(o.server as string, o.tokenFile === undefined ? undefined : readTokenFile(o.tokenFile));
  try {
    return await body(client);
  } finally {
    client.close();
  }
}
