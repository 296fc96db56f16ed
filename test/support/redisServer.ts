/**
 * A real redis-server for the distributed import's tests: on 127.0.0.1, a free port, a temporary
 * directory, `appendonly yes` (as docs/distributed.md asks of a deployment), started and stopped
 * by the test with bounded waits. Missing redis-server skips the caller's tests, unless
 * SST_INGEST_REQUIRE_REDIS=1 (CI, .ci/run) makes that a failure.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess, execFileSync, spawn } from 'child_process';

export function redisServerAvailable(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env.SST_INGEST_REQUIRE_REDIS === '1') throw new Error('redis-server is required (SST_INGEST_REQUIRE_REDIS=1)');
    return false;
  }
}

export interface RedisServer {
  url: string;
  port: number;
  dir: string;
  /** Stops it (SIGKILL when `hard`: a crash, what appendonly must survive). */
  stop(hard?: boolean): Promise<void>;
  /** Starts it again on the same port and directory (after stop). */
  restart(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      s.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    s.on('error', () => resolve(false));
  });
}

async function launch(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', '', '--daemonize', 'no'],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 200; i++) {
    if (await ping(port)) return child;
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not answer within 5 s`);
}

export async function startRedisServer(): Promise<RedisServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-test-'));
  const port = await freePort();
  let child: ChildProcess | null = await launch(port, dir);
  const stop = async (hard = false): Promise<void> => {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(hard ? 'SIGKILL' : 'SIGTERM');
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    stop,
    restart: async () => {
      await stop();
      child = await launch(port, dir);
    },
  };
}

/** Stops the server and removes its directory. */
export async function removeRedisServer(r: RedisServer): Promise<void> {
  await r.stop();
  fs.rmSync(r.dir, { recursive: true, force: true });
}
