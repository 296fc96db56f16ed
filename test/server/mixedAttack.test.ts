/**
 * A mixed attack on `ingest serve` (issue 41, done-when), bounded and on 127.0.0.1: for a few
 * seconds at once, half-open connection floods, stalled 4 MiB bodies (together far past the
 * memory budget), aborted SST uploads, import requests with oversized options, and a pipelined
 * writer, while legitimate clients write and read throughout. Measured on the server process (a
 * child, so its RSS and descriptors are its own):
 * - legitimate requests keep succeeding: at most MAX_LEGIT_REFUSED_SHARE of them get 503 (the
 *   memory budget's answer), none anything else but success;
 * - the RSS stays within the idle RSS plus the memory budget plus RSS_SLACK_BYTES (V8's own
 *   growth under load);
 * - descriptors return to their starting count once the attack stops;
 * - the database equals a model of the acknowledged writes, the pipelined ones in send order.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import * as http from 'http';
import { ChildServer, entriesAsMap, multipartOf, scanAll, send, startChildServer, tmpDir, writeSst } from './helpers';

const MiB = 1 << 20;
const BUDGET_BYTES = 32 * MiB;
const ATTACK_MS = 4000;
const MAX_LEGIT_REFUSED_SHARE = 0.1;
const RSS_SLACK_BYTES = 96 * MiB;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Number(m[1]) * 1024;
}

function descriptors(pid: number): number {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

function port(url: string): number {
  return Number(new URL(url).port);
}

/** Opens a connection that sends `data` and then nothing; destroyed by the caller. */
function silent(url: string, data: string | Buffer): net.Socket {
  const s = net.connect(port(url), '127.0.0.1', () => s.write(data));
  s.on('error', () => undefined);
  return s;
}

async function until(what: string, check: () => boolean | Promise<boolean>, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The attackers, each looping until `stop()` says so; returns the sockets to destroy. */
function attack(server: ChildServer, root: string, stop: () => boolean): { sockets: net.Socket[]; done: Promise<void> } {
  const sockets: net.Socket[] = [];
  // Half-open floods: a partial request line, then silence.
  for (let i = 0; i < 200; i++) sockets.push(silent(server.url, 'GET /v1/kv/x HT'));
  const sst = writeSst(path.join(root, 'attack.sst'), [['att', 'x']]);
  const upload = multipartOf([{ name: 'a.sst', data: Buffer.concat([sst, Buffer.alloc(MiB)]) }]);
  const loops = [
    // Stalled bodies: 4 MiB declared, 1 KiB sent.
    (async () => {
      for (let i = 0; !stop() && i < 40; i++) {
        sockets.push(
          silent(server.url, `PUT /v1/kv/stall${i} HTTP/1.1\r\nHost: x\r\nContent-Length: ${4 * MiB}\r\n\r\n${'s'.repeat(1024)}`),
        );
        await new Promise((r) => setTimeout(r, 50));
      }
    })(),
    // Aborted uploads: half the body, then the connection goes.
    (async () => {
      while (!stop()) {
        const s = silent(
          server.url,
          Buffer.concat([
            Buffer.from(
              `POST /v1/imports/sst HTTP/1.1\r\nHost: x\r\nContent-Type: ${upload.contentType}\r\nContent-Length: ${upload.body.length}\r\n\r\n`,
            ),
            upload.body.subarray(0, upload.body.length >> 1),
          ]),
        );
        await new Promise((r) => setTimeout(r, 100));
        s.destroy();
      }
    })(),
    // Oversized options: refused with 400 before the body is read.
    (async () => {
      while (!stop()) {
        const r = await send(server.url, { method: 'POST', path: '/v1/imports?threads=1000&memory-limit=200GiB', body: 'k,v\n' });
        expect(r.status).toBe(400);
      }
    })(),
  ];
  return { sockets, done: Promise.all(loops).then(() => undefined) };
}

/** 40 PUTs and 20 DELETEs (of the even keys) pipelined on one connection: answered in order, applied in order. */
async function pipelinedWriter(url: string, model: Map<string, string>): Promise<void> {
  let raw = '';
  for (let i = 0; i < 40; i++) {
    raw += `PUT /v1/kv/pipe${i} HTTP/1.1\r\nHost: x\r\nContent-Length: ${`p${i}`.length}\r\n\r\np${i}`;
    if (i % 2 === 0) raw += `DELETE /v1/kv/pipe${i} HTTP/1.1\r\nHost: x\r\n\r\n`;
  }
  const text = await new Promise<string>((resolve, reject) => {
    let out = '';
    const s = net.connect(port(url), '127.0.0.1', () => s.write(raw));
    s.on('data', (d: Buffer) => {
      out += d.toString();
      if ((out.match(/^HTTP\/1\.1 /gm) ?? []).length === 60) {
        s.destroy();
        resolve(out);
      }
    });
    s.on('error', reject);
    setTimeout(() => reject(new Error(`pipelined answers: ${out.slice(0, 200)}`)), 20_000).unref();
  });
  const statuses = [...text.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => Number(m[1]));
  expect(statuses).toEqual(Array(60).fill(204));
  const seqs = [...text.matchAll(/^ingest-sequence: (\d+)/gim)].map((m) => Number(m[1]));
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  for (let i = 1; i < 40; i += 2) model.set(`pipe${i}`, `p${i}`);
}

test('a mixed attack: legitimate clients keep being served, RSS bounded, descriptors come back, nothing acknowledged lost', async () => {
  const root = tmpDir('server-mixed-attack-');
  const server = await startChildServer(path.join(root, 'db'), ['--memory-budget', `${BUDGET_BYTES}`]);
  const model = new Map<string, string>();
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    for (let i = 0; i < 20; i++) await send(server.url, { path: '/healthz', agent });
    const idleRss = rssBytes(server.pid);
    const idleFds = descriptors(server.pid);
    let peakRss = idleRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(server.pid))), 50);
    const startMs = Date.now();
    const stop = (): boolean => Date.now() - startMs > ATTACK_MS;
    const attackers = attack(server, root, stop);
    const pipelined = pipelinedWriter(server.url, model);
    const counts = { ok: 0, refused: 0, other: 0 };
    for (let i = 0; !stop(); i++) {
      const key = `legit${i}`;
      const put = await send(server.url, { method: 'PUT', path: `/v1/kv/${key}`, body: `v${i}`, agent });
      if (put.status === 204) {
        model.set(key, `v${i}`);
        counts.ok++;
      } else if (put.status === 503) counts.refused++;
      else counts.other++;
      const get = await send(server.url, { path: `/v1/kv/legit${Math.floor(i / 2)}`, agent });
      if (get.status === 200 || get.status === 404) counts.ok++;
      else counts.other++;
    }
    await attackers.done;
    await pipelined;
    clearInterval(sampler);
    for (const s of attackers.sockets) s.destroy();
    agent.destroy();
    expect(counts.other).toBe(0);
    expect(counts.refused / (counts.ok + counts.refused)).toBeLessThanOrEqual(MAX_LEGIT_REFUSED_SHARE);
    expect(counts.ok).toBeGreaterThan(50);
    expect(peakRss).toBeLessThan(idleRss + BUDGET_BYTES + RSS_SLACK_BYTES);
    await until('descriptors back', () => descriptors(server.pid) <= idleFds, 15_000);
    const stored = entriesAsMap(await scanAll(server.url));
    for (const [k, v] of model) expect({ k, v: stored.get(k) }).toEqual({ k, v });
    for (let i = 0; i < 40; i += 2) expect(stored.has(`pipe${i}`)).toBe(false);
    process.stdout.write(`mixed attack: ${JSON.stringify({ ...counts, idleRssMiB: idleRss >> 20, peakRssMiB: peakRss >> 20, idleFds })}\n`);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    fs.rmSync(root, { recursive: true, force: true });
  }
}, 120_000);
