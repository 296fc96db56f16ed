/**
 * Debian's chromium for the web console's browser test (test/server/console.test.ts), driven by
 * playwright-core (which downloads no browser of its own): found at SST_INGEST_CHROMIUM, else on
 * PATH as chromium or chromium-browser. Missing chromium skips the caller's tests, unless
 * SST_INGEST_REQUIRE_CHROMIUM=1 (CI, .ci/run, which installs it) makes that a failure.
 */
import { Browser, chromium } from 'playwright-core';
import { findOnPath } from './rocksdbTools';

const NAMES = ['chromium', 'chromium-browser'];

/** The chromium executable, or null (a failure under SST_INGEST_REQUIRE_CHROMIUM=1). */
export function chromiumPath(): string | null {
  const given = process.env.SST_INGEST_CHROMIUM;
  const found = given !== undefined && given !== '' ? given : (NAMES.map(findOnPath).find((p) => p !== null) ?? null);
  if (found === null && process.env.SST_INGEST_REQUIRE_CHROMIUM === '1') {
    throw new Error('chromium is required (SST_INGEST_REQUIRE_CHROMIUM=1): apt-get install -y chromium');
  }
  return found;
}

/** Headless chromium; --no-sandbox when running as root (CI), which chromium's sandbox refuses. */
export function launchChromium(executablePath: string): Promise<Browser> {
  const args = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath, headless: true, args, timeout: 30_000 });
}
