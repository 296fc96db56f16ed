/**
 * The server's explicit limits: every body, key, value, batch, scan, queue and connection is
 * bounded, so no client (malicious or buggy) can make the process hold more than these. Defaults
 * below; `ingest serve` takes each as an option (docs/serve.md, "Limits").
 *
 * Keys travel in the URL path, which Node caps with the header size: maxHeaderBytes is sized so
 * a maximal key fits percent-encoded (3 characters a byte) with room for the rest of the request.
 */
import * as os from 'os';
import { DEFAULT_MEMORY_WAIT_MS, defaultMemoryBudgetBytes } from './memoryBudget';

/** Where `ingest serve` listens unless told: loopback only (anything else needs a token). */
export const DEFAULT_PORT = 7420;
export const DEFAULT_HOST = '127.0.0.1';

export interface ServerLimits {
  /** Largest key, in bytes, in a path, a batch or a scan bound. */
  maxKeyBytes: number;
  /** Largest value of a PUT or of one batch operation. */
  maxValueBytes: number;
  /** Largest body of POST /v1/batch. */
  maxBatchBodyBytes: number;
  /** Most operations in one batch. */
  maxBatchOperations: number;
  /** Most entries one scan returns (its `limit` defaults to defaultScanLimit). */
  maxScanLimit: number;
  defaultScanLimit: number;
  /** Largest CSV body of POST /v1/imports, after gzip decoding (it is spooled to disk, not memory). */
  maxImportBodyBytes: number;
  /** Largest total upload of POST /v1/imports/sst, and most files in it. */
  maxUploadBytes: number;
  maxUploadFiles: number;
  /**
   * Staged imports (stagedImports.ts): the bytes every staged import together may hold on disk
   * (bodies being received included; a PUT past it is 507 before its body is read), and how long
   * one may go untouched before it is removed (at start and hourly).
   */
  maxStagedBytes: number;
  stagedMaxAgeMs: number;
  /**
   * Bounds on an import request's own options (importQuery.ts): parse and merge threads each at
   * most maxImportThreads, --memory-limit at most maxImportMemoryBytes, --target-file-size at
   * least minImportTargetFileBytes (a 1-byte target made 20,000 SSTs and ran out of file
   * descriptors), --block-size within [1 KiB, maxImportBlockBytes], --max-bad-rows and
   * --max-reported at most maxImportKeptRows (each kept bad row or reported conflict is held
   * in memory). A request over one is 400 naming the option and the limit.
   */
  maxImportThreads: number;
  maxImportMemoryBytes: number;
  minImportTargetFileBytes: number;
  maxImportBlockBytes: number;
  maxImportKeptRows: number;
  /** Imports (CSV or SST) running at once; more wait in a queue of maxQueuedImports, beyond which 429. */
  maxConcurrentImports: number;
  maxQueuedImports: number;
  /** Open connections; more are refused by the socket layer. */
  maxConnections: number;
  /** Requests handled at once (a request over it gets 429 at once, before its body is read). */
  maxInFlightRequests: number;
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive and answer a request that is not an import (a slow body or reader is cut off: 408). */
  requestTimeoutMs: number;
  /** Time an import request may take, queueing included. */
  importTimeoutMs: number;
  /** Idle time before a keep-alive connection is closed. */
  keepAliveTimeoutMs: number;
  /** Time SIGTERM waits for in-flight requests before cutting them off. */
  drainTimeoutMs: number;
  /** Node's max header size: the request line and headers together. */
  maxHeaderBytes: number;
  /** Bytes every request together may hold in memory (memoryBudget.ts); past it, 503 with Retry-After. */
  memoryBudgetBytes: number;
  /** How long a request waits for room in the memory budget before its 503. */
  memoryWaitMs: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export const DEFAULT_LIMITS: Readonly<ServerLimits> = {
  maxKeyBytes: 8 * KiB,
  maxValueBytes: 16 * MiB,
  maxBatchBodyBytes: 32 * MiB,
  maxBatchOperations: 100_000,
  maxScanLimit: 1_000_000,
  defaultScanLimit: 1000,
  maxImportBodyBytes: 64 * GiB,
  maxUploadBytes: 64 * GiB,
  maxUploadFiles: 10_000,
  maxStagedBytes: 64 * GiB,
  stagedMaxAgeMs: 3 * 24 * 3600_000,
  // The threads the machine has: more only queue for the same cores, each with its share of memory.
  maxImportThreads: Math.max(1, Math.min(16, os.availableParallelism())),
  maxImportMemoryBytes: 1 * GiB,
  minImportTargetFileBytes: 1 * MiB,
  maxImportBlockBytes: 4 * MiB,
  maxImportKeptRows: 1_000_000,
  maxConcurrentImports: 1,
  maxQueuedImports: 8,
  maxConnections: 1024,
  maxInFlightRequests: 4096,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  importTimeoutMs: 6 * 3600_000,
  keepAliveTimeoutMs: 5_000,
  drainTimeoutMs: 60_000,
  // 8 KiB of key as %XX is 24 KiB; the rest of the request line and headers get 8 KiB.
  maxHeaderBytes: 32 * KiB,
  memoryBudgetBytes: defaultMemoryBudgetBytes(),
  memoryWaitMs: DEFAULT_MEMORY_WAIT_MS,
};
