/**
 * Pending jobs that will never be resumed: a nightly script imports dated files
 * (`orders-2026-11-07.csv`), and a job's id hashes its input paths, so the job a killed night
 * left is never the one a later night resumes, and its scratch space (runs and SSTs, about twice
 * the input) stays in the database for good. Every import into a database therefore lists the
 * other pending jobs there, and discards those idle for longer than --pending-max-age.
 *
 * Why 3 days by default: a night's job is resumed by rerunning the same command, which a person
 * does within a day or two (a failure on Friday night is rerun on Monday: 3 days); older than
 * that, the same inputs would be imported afresh, not resumed.
 *
 * Contract: a running job (its owner alive) is never discarded, nor is the job this import would
 * resume (`keepJobId`); age is since the job's last checkpoint. Discarding is discardJob's (one
 * atomic rename, then removal). The lists are plain data for the summary.
 */
import { IngestError } from '../../util/errors';
import { PendingJob, discardJob, listPendingJobs } from './importJob';

export const DEFAULT_PENDING_MAX_AGE_MS = 3 * 24 * 3600_000;

/** A pending job as an import's summary lists it. */
export interface PendingJobSummary {
  jobId: string;
  phase: string;
  running: boolean;
  inputs: string[];
  /** Seconds since its last checkpoint. */
  ageSeconds: number;
  scratchBytes: number;
}

export interface PendingJobsReport {
  /** Discarded now: idle past the maximum age. */
  discarded: PendingJobSummary[];
  /** Left in place: running, young enough, or the one this import resumes. */
  pending: PendingJobSummary[];
  maxAgeSeconds: number | null;
}

function summaryOf(job: PendingJob, nowMs: number): PendingJobSummary {
  const ageMs = Math.max(0, nowMs - Date.parse(job.updatedAt));
  return {
    jobId: job.jobId,
    phase: job.phase,
    running: job.running,
    inputs: job.inputs,
    ageSeconds: Math.round(ageMs / 1000),
    scratchBytes: job.scratchBytes,
  };
}

/** Lists the pending jobs of `targetDir` but `keepJobId`'s, discarding those idle for over `maxAgeMs` (null: none). */
export function expirePendingJobs(
  targetDir: string,
  maxAgeMs: number | null,
  keepJobId: string | null,
  nowMs = Date.now(),
): PendingJobsReport {
  const report: PendingJobsReport = { discarded: [], pending: [], maxAgeSeconds: maxAgeMs === null ? null : Math.round(maxAgeMs / 1000) };
  for (const job of listPendingJobs(targetDir)) {
    if (job.jobId === keepJobId) continue;
    const summary = summaryOf(job, nowMs);
    const expired = maxAgeMs !== null && !job.running && summary.ageSeconds * 1000 > maxAgeMs;
    if (!expired) {
      report.pending.push(summary);
      continue;
    }
    try {
      discardJob(targetDir, job.jobId);
      report.discarded.push(summary);
    } catch (err) {
      // Taken up by another process meanwhile (BUSY), or gone: it stays listed, not discarded.
      if (!(err instanceof IngestError)) throw err;
      report.pending.push(summary);
    }
  }
  return report;
}

const DURATION = /^([0-9]+)(s|m|h|d)$/;
const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3600_000, d: 24 * 3600_000 };

/** "3d", "12h", "90m", "600s" → milliseconds; "never" → null (no expiry). USAGE otherwise. */
export function parsePendingMaxAge(text: string): number | null {
  if (text === 'never') return null;
  return parseDurationMs(text, '--pending-max-age', 'or never');
}

/** A positive duration "3d", "12h", "90m", "600s" in milliseconds; USAGE naming `flag` otherwise. */
export function parseDurationMs(text: string, flag: string, alternative = ''): number {
  const m = DURATION.exec(text);
  if (m === null || Number(m[1]) === 0)
    throw new IngestError(
      'USAGE',
      `${flag} must be a duration like 3d, 12h, 90m or 600s${alternative === '' ? '' : `, ${alternative}`}; got "${text}"`,
    );
  return Number(m[1]) * UNIT_MS[m[2]];
}
