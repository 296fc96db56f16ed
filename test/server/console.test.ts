/**
 * The web console (GET /ui, docs/console.md) in a real browser: Debian's chromium driven by
 * playwright-core (no browser download), against an IngestServer started here on 127.0.0.1 with a
 * token. The bundle is built first (scripts/build-ui.js), so a clean checkout needs no build.
 *
 * What is checked, each against the JSON the server gives for the same thing:
 * - the login: no token and a wrong token show the form (and say why), the right one the console;
 * - the LSM view draws exactly the files and levels of GET /v1/stats (read from the bars' data
 *   attributes), and follows an ingestion (a new file drawn, still exactly the stats' files);
 * - an import whose body the test sends part by part (each part once the page shows the last)
 *   is drawn receiving with its bytes and progress advancing, then among the recent ones as
 *   landed with the counts of GET /v1/console/imports;
 * - a conflicting import's report pages (next, page size) and filters (key prefix, source file)
 *   to exactly the rows of its JSON report and of GET /v1/console/imports/{id}/conflicts;
 * - the charts draw the server's history.
 * Screenshots of each view go to test-output/console/ (printed at the end). The page must raise
 * no script error and no Content-Security-Policy violation. Without chromium the suite is skipped,
 * unless SST_INGEST_REQUIRE_CHROMIUM=1 (.ci/run) makes that a failure.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { IngestServer } from '../../src/server/server';
import { chromiumPath, launchChromium } from '../support/chromium';
import { REPO_ROOT } from '../support/paths';
import { Reply, csvOf, send, tmpDir } from './helpers';

const TOKEN = 'console-test-token-0123456789';
const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-output', 'console');
/** Bounded waits: each names what it waited for when it runs out. */
const WAIT_MS = 15_000;
const POLL_MS = 100;
const CHROMIUM = chromiumPath();
const describeWithChromium = CHROMIUM === null ? describe.skip : describe;

interface DrawnFile {
  level: number;
  number: number;
  sizeBytes: number;
  rangeDeletions: number;
}

interface StatsDoc {
  levels: { level: number; files: { number: number; sizeBytes: number; rangeDeletions?: number }[] }[];
}

interface ImportViewDoc {
  id: string;
  name: string;
  phase: string;
  bytes: number;
  totalBytes: number | null;
  outcome: string;
  rows: number;
  counts: { sstKeys: number; new: number; unchanged: number; conflicts: number } | null;
  reportAvailable: boolean;
}

interface ConflictDoc {
  key: string;
  keyHex: string;
  existingValue: { data: string };
  newValue: { data: string };
  source: { file: string; line: number } | null;
}

/** Polls `probe` until it returns a value (not undefined), at most WAIT_MS; fails naming `what` and the last state. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, describeLast: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up after ${WAIT_MS} ms waiting for ${what} ${describeLast()}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function getJson<T>(url: string, pathAndQuery: string): Promise<T> {
  const reply = await send(url, { path: pathAndQuery, token: TOKEN });
  if (reply.status !== 200) throw new Error(`GET ${pathAndQuery}: ${reply.status} ${reply.body.toString().slice(0, 300)}`);
  return JSON.parse(reply.body.toString('utf8')) as T;
}

function filesOfStats(doc: StatsDoc): DrawnFile[] {
  return doc.levels
    .flatMap((l) =>
      l.files.map((f) => ({ level: l.level, number: f.number, sizeBytes: f.sizeBytes, rangeDeletions: f.rangeDeletions ?? 0 })),
    )
    .sort((a, b) => a.level - b.level || a.number - b.number);
}

async function drawnFiles(page: Page): Promise<DrawnFile[]> {
  const drawn = await page.$$eval('[data-file-number]', (els) =>
    els.map((e) => ({
      level: Number(e.getAttribute('data-level')),
      number: Number(e.getAttribute('data-file-number')),
      sizeBytes: Number(e.getAttribute('data-size-bytes')),
      rangeDeletions: Number(e.getAttribute('data-range-deletions')),
    })),
  );
  return drawn.sort((a, b) => a.level - b.level || a.number - b.number);
}

/** Waits until the LSM view draws exactly what /v1/stats reports (and `accept` holds); returns it. */
async function lsmMatchingStats(page: Page, url: string, accept: (files: DrawnFile[]) => boolean = () => true): Promise<DrawnFile[]> {
  let last = '';
  return waitFor(
    'the LSM view to draw the files of /v1/stats',
    async () => {
      const expected = filesOfStats(await getJson<StatsDoc>(url, '/v1/stats'));
      const drawn = await drawnFiles(page);
      last = `stats ${JSON.stringify(expected)}, drawn ${JSON.stringify(drawn)}`;
      return JSON.stringify(drawn) === JSON.stringify(expected) && accept(drawn) ? drawn : undefined;
    },
    () => last,
  );
}

function postImport(url: string, query: string, body: string): Promise<Reply> {
  return send(url, { method: 'POST', path: `/v1/imports?${query}`, token: TOKEN, body });
}

interface PacedUpload {
  /** Sends the next part of the body (the last one ends it). */
  send(part: string): void;
  reply: Promise<Reply>;
}

/** POST /v1/imports whose body (`totalBytes`, Content-Length set) the test sends part by part: a slow client. */
function pacedImport(url: string, query: string, totalBytes: number): PacedUpload {
  const u = new URL(url);
  let sentBytes = 0;
  let req: http.ClientRequest | null = null;
  const reply = new Promise<Reply>((resolve, reject) => {
    req = http.request(
      {
        host: u.hostname,
        port: Number(u.port),
        method: 'POST',
        path: `/v1/imports?${query}`,
        agent: false,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-length': totalBytes },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      },
    );
    req.on('error', reject);
  });
  return {
    send: (part) => {
      sentBytes += Buffer.byteLength(part);
      if (sentBytes >= totalBytes) req?.end(part);
      else req?.write(part);
    },
    reply,
  };
}

/** Opens the console at `hash`, signing in when the form shows (each test stands on its own). */
async function openConsole(page: Page, url: string, hash: string): Promise<void> {
  await page.goto(`${url}/ui#${hash}`);
  await page.waitForSelector('.app, form.login');
  if ((await page.locator('form.login').count()) === 0) return;
  await page.fill('input[name=token]', TOKEN);
  await page.click('form.login button[type=submit]');
  await page.waitForSelector('.app');
}

async function screenshot(page: Page, name: string, shots: string[]): Promise<void> {
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
}

/** `n` rows of `prefix` + a zero-padded number, each with a value `value(i)`. */
function rowsOf(prefix: string, from: number, to: number, step: number, value: (i: number) => string): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  for (let i = from; i < to; i += step) rows.push([`${prefix}${String(i).padStart(4, '0')}`, value(i)]);
  return rows;
}

describeWithChromium('the web console in chromium', () => {
  let server: IngestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let dir: string;
  const problems: string[] = [];
  const shots: string[] = [];

  beforeAll(async () => {
    execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build-ui.js')], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    dir = tmpDir('console-test-');
    // A small memtable and no background compaction: the writes below leave L0 files that stay,
    // so the LSM has more than one level and changes only when the test changes it.
    server = await IngestServer.start({
      dbDir: path.join(dir, 'db'),
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      engineOptions: { writeBufferSizeBytes: 64 * 1024, disableAutoCompactions: true },
      log: () => undefined,
    });
    browser = await launchChromium(CHROMIUM as string);
    context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) problems.push(`console: ${m.text()}`);
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
    if (shots.length > 0) process.stdout.write(`console screenshots:\n${shots.map((s) => `  ${s}`).join('\n')}\n`);
  });

  afterEach(() => {
    expect(problems.splice(0)).toEqual([]);
  });

  test('no token and a wrong token show the login form; the right token opens the console', async () => {
    await page.goto(`${server.url}/ui`);
    await page.waitForSelector('form.login');
    await page.fill('input[name=token]', 'not-the-token');
    await page.click('form.login button[type=submit]');
    await page.waitForSelector('.login-error');
    expect(await page.textContent('.login-error')).toContain('refused this token');
    await screenshot(page, 'login', shots);

    await page.fill('input[name=token]', TOKEN);
    await page.click('form.login button[type=submit]');
    await page.waitForSelector('.app .lsm');

    // A token that stops working (a wrong one in the tab's storage): the next load shows the form again.
    // (A string: the test's TypeScript has no DOM library.)
    await page.evaluate("sessionStorage.setItem('sst-ingest.console.token', 'wrong-token')");
    await page.reload();
    await page.waitForSelector('form.login');
    expect(await page.textContent('.login-error')).toContain('refused the stored token');
    await page.fill('input[name=token]', TOKEN);
    await page.click('form.login button[type=submit]');
    await page.waitForSelector('.app .lsm');
  }, 30_000);

  test('the LSM view draws exactly the files and levels of /v1/stats, and follows an ingestion', async () => {
    // An import (a last-level file: k0000..k9990, every tenth), then writes of three narrower
    // ranges that flush into L0 files, one holding a range deletion.
    expect((await postImport(server.url, 'name=base.csv', csvOf(rowsOf('k', 0, 10_000, 10, (i) => `old-${i}`)))).status).toBe(200);
    for (const [b, from] of [2001, 5001, 7501].entries()) {
      const ops: object[] = rowsOf('k', from, from + 800, 2, (i) => `${'v'.repeat(180)}${i}`).map(([key, value]) => ({
        op: 'put',
        key,
        value,
      }));
      if (b === 1) ops.push({ op: 'deleteRange', start: 'k5101', end: 'k5201' });
      expect((await send(server.url, { method: 'POST', path: '/v1/batch', token: TOKEN, body: JSON.stringify(ops) })).status).toBe(200);
    }
    await openConsole(page, server.url, 'lsm');
    const before = await lsmMatchingStats(page, server.url, (files) => files.some((f) => f.level === 0) && files.some((f) => f.level > 0));

    // Details on hover name the file hovered.
    const first = page.locator('[data-file-number]').first();
    await first.hover();
    const hovered = await first.getAttribute('data-file-number');
    await page.waitForSelector(`.file-details[data-details-file-number="${hovered}"]`);
    await screenshot(page, 'lsm', shots);

    expect((await postImport(server.url, 'name=more.csv', csvOf(rowsOf('k', 8006, 10_000, 10, (i) => `more-${i}`)))).status).toBe(200);
    const known = new Set(before.map((f) => f.number));
    const after = await lsmMatchingStats(page, server.url, (files) => files.some((f) => !known.has(f.number)));
    expect(after).not.toEqual(before);
  }, 40_000);

  test('an import sent slowly is shown running with its bytes advancing, then landed', async () => {
    await openConsole(page, server.url, 'imports');
    await page.waitForSelector('.imports-view');
    const rows = rowsOf('s', 0, 8000, 1, (i) => `slow-${i}-${'p'.repeat(200)}`);
    const parts = Array.from({ length: 4 }, (_, k) => csvOf(rows.slice(k * 2000, (k + 1) * 2000)));
    const totalBytes = parts.reduce((n, p) => n + Buffer.byteLength(p), 0);
    const upload = pacedImport(server.url, 'name=slow.csv', totalBytes);

    // Each part is sent only once the page shows the bytes sent so far, so the progress drawn
    // must advance part by part (no timing involved: the test paces the client by the page).
    const row = page.locator('table.running tr[data-import-id]').first();
    const drawn: Array<{ bytes: number; percent: string }> = [];
    let sentBytes = 0;
    for (const [k, part] of parts.slice(0, -1).entries()) {
      upload.send(part);
      sentBytes += Buffer.byteLength(part);
      drawn.push(
        await waitFor(`the running import drawn receiving with ${sentBytes} bytes`, async () => {
          if ((await row.count()) === 0 || (await row.getAttribute('data-phase')) !== 'receiving') return undefined;
          const bytes = Number(await row.getAttribute('data-bytes'));
          return bytes === sentBytes ? { bytes, percent: (await row.locator('.progress-text').textContent()) ?? '' } : undefined;
        }),
      );
      if (k === 1) await screenshot(page, 'imports-running', shots);
    }
    expect(drawn.map((d) => d.percent)).toEqual(drawn.map((d) => `${Math.round((100 * d.bytes) / totalBytes)}%`));
    const id = (await row.getAttribute('data-import-id')) ?? '';
    upload.send(parts[parts.length - 1]);
    expect((await upload.reply).status).toBe(200);

    const landed = await waitFor('the slow import among the recent ones', async () => {
      const doc = await getJson<{ recent: ImportViewDoc[] }>(server.url, '/v1/console/imports');
      return doc.recent.find((i) => i.id === id);
    });
    expect(landed).toMatchObject({ name: 'slow.csv', outcome: 'landed', counts: { sstKeys: 8000, new: 8000, unchanged: 0, conflicts: 0 } });
    const recentRow = page.locator(`table.recent tr[data-import-id="${id}"]`);
    await recentRow.waitFor();
    expect(await recentRow.getAttribute('data-outcome')).toBe('landed');
    expect(await recentRow.locator('td').nth(7).textContent()).toBe('8,000');
    await screenshot(page, 'imports', shots);
  }, 40_000);

  test("a conflicting import's report pages and filters to exactly the rows of its JSON report", async () => {
    // 150 keys of base.csv (the LSM test's import), each with another value.
    const conflicting = rowsOf('k', 0, 1500, 10, (i) => `new-${i}`);
    const reply = await postImport(server.url, 'name=conflicts.csv&max-reported=1000', csvOf(conflicting));
    expect(reply.status).toBe(409);
    const report = (JSON.parse(reply.body.toString()) as { conflictReport: { conflicts: ConflictDoc[] } }).conflictReport.conflicts;
    expect(report.length).toBe(150);
    const imports = await getJson<{ recent: ImportViewDoc[] }>(server.url, '/v1/console/imports');
    const entry = imports.recent.find((i) => i.name === 'conflicts.csv');
    expect(entry).toMatchObject({ outcome: 'conflicts', reportAvailable: true });
    const id = (entry as ImportViewDoc).id;

    const shownKeys = async (offset: number, total: number): Promise<string[]> =>
      waitFor(`the conflicts table at offset ${offset} of ${total}`, async () => {
        const table = page.locator(`table.conflicts[data-offset="${offset}"][data-total="${total}"]`);
        if ((await table.count()) === 0) return undefined;
        return table.locator('tr[data-key-hex]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key-hex') ?? ''));
      });
    const page0 = await getJson<{ total: number; conflicts: ConflictDoc[] }>(
      server.url,
      `/v1/console/imports/${id}/conflicts?offset=0&limit=25`,
    );
    expect(page0.conflicts.map((c) => c.keyHex)).toEqual(report.slice(0, 25).map((c) => c.keyHex));

    await openConsole(page, server.url, `conflicts/${encodeURIComponent(id)}`);
    expect(await shownKeys(0, 150)).toEqual(report.slice(0, 25).map((c) => c.keyHex));
    const firstRow = page.locator('table.conflicts tr[data-key-hex]').first();
    const cells = await firstRow.locator('td').allTextContents();
    const c0 = report[0];
    expect(cells.slice(1)).toEqual([c0.key, `${c0.source?.file}:${c0.source?.line}`, c0.existingValue.data, c0.newValue.data]);
    await screenshot(page, 'conflicts', shots);

    await page.click('.pager button.next');
    expect(await shownKeys(25, 150)).toEqual(report.slice(25, 50).map((c) => c.keyHex));
    await page.selectOption('select.page-size', '50');
    expect(await shownKeys(0, 150)).toEqual(report.slice(0, 50).map((c) => c.keyHex));

    const withPrefix = report.filter((c) => c.key.startsWith('k1'));
    expect(withPrefix.length).toBe(50);
    await page.fill('input.prefix-filter', 'k1');
    expect(await shownKeys(0, 50)).toEqual(withPrefix.map((c) => c.keyHex));
    await page.fill('input.file-filter', 'other.csv');
    await waitFor('no rows for another source file', async () =>
      (await page.locator('table.conflicts').count()) === 0 ? true : undefined,
    );
    await page.fill('input.file-filter', 'conflicts.csv');
    expect(await shownKeys(0, 50)).toEqual(withPrefix.map((c) => c.keyHex));
    await screenshot(page, 'conflicts-filtered', shots);
  }, 40_000);

  test("the charts draw the server's history", async () => {
    await openConsole(page, server.url, 'charts');
    await waitFor('two samples of history drawn', async () => {
      const count = Number(await page.locator('.charts-view').getAttribute('data-sample-count'));
      return count >= 2 ? count : undefined;
    });
    expect(await page.locator('.chart-panel canvas').count()).toBe(5);
    await screenshot(page, 'charts', shots);
  }, 30_000);
});
