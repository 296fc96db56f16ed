/**
 * cli/commands/importRemote.ts (import, plan and check with --server), loaded on first use: the
 * client side of --server (the HTTP client, the uploads, their report printing: about 30 ms of
 * modules at start-up) is needed only when a command runs with --server, and a nightly
 * `ingest import --db` never does. A module of its own so that the commands that reach the
 * server and importRemote.ts, which prints through their output functions, import no cycle.
 */
import { onFirstUse } from '../../src/util/onFirstUse';

export const remoteImport = onFirstUse(() => require('./importRemote') as typeof import('./importRemote'));
