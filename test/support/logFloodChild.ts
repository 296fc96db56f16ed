/**
 * A child for test/server/serverLog.test.ts: writes argv[2] request lines through a ServerLog to
 * stderr in one synchronous loop, faster than any pipe or file takes them, then prints the
 * ServerLog's count of dropped lines as JSON on stdout and flushes.
 */
import { ServerLog } from '../../src/server/serverLog';

const lines = Number(process.argv[2]);
const log = new ServerLog({ level: 'info' });
const request = {
  id: 'flood-1',
  method: 'PUT',
  route: '/v1/kv/{key}',
  status: 204,
  durationMs: 0.1,
  bytesIn: 157,
  bytesOut: 131,
  aborted: false,
};
for (let i = 0; i < lines; i++) log.request(request);
process.stdout.write(`${JSON.stringify({ dropped: log.droppedLines })}\n`);
log.stopped();
