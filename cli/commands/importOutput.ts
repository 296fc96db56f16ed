/**
 * How the pipeline commands print a run's result, whether it ran here (--db) or on a server
 * (--server, cli/commands/importRemote.ts): with --json the one document of
 * src/ingest/importJson.ts on stdout, else human lines unless --quiet; then, unless told not to
 * (`fail` false: the caller reports the failure itself), the conflict failure that makes the
 * command exit 3. One place, so both targets print alike.
 */
import { DbCheckResult, DbImportFile, DbImportResult, conflictFailure } from '../../src/ingest/importIntoDb';
import { dbCheckJson, dbImportJson } from '../../src/ingest/importJson';
import { DbTextCodec } from './dbText';
import { PendingJobSummary } from '../../src/ingest/resume/pendingExpiry';
import { SpaceSettleResult } from '../../src/ingest/spacePolicy';

/** Prints an import's or a plan's result (--json: the document; else the human lines) and fails with exit 3 when abort stopped it. */
export function printImportResult(result: DbImportResult, o: { json?: boolean; quiet?: boolean }, codec: DbTextCodec, fail = true): void {
  if (o.json === true) process.stdout.write(`${JSON.stringify(dbImportJson(result))}\n`);
  else if (o.quiet !== true) printHuman(result, codec);
  const failure = conflictFailure(result);
  if (fail && failure !== null) throw failure;
}

function printHuman(r: DbImportResult, codec: DbTextCodec): void {
  const s = r.report.summary;
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(
    `imported ${r.import.rowsWritten} rows (${r.import.badRows} bad, ${r.import.duplicates.count} duplicates); against ${r.db}: ` +
      `${s.new} new, ${s.unchanged} unchanged, ${s.conflicts} conflicting${r.reportPath !== null ? ` (report in ${r.reportPath})` : ''}`,
  );
  for (const j of r.pendingJobs?.discarded ?? [])
    out(`discarded pending import ${j.jobId} (${pendingLine(j)}): idle longer than --pending-max-age`);
  const left = r.pendingJobs?.pending ?? [];
  if (left.length > 0)
    out(
      `${left.length} other pending import(s) in ${r.db}, ${mib(left.reduce((a, j) => a + j.scratchBytes, 0))} MiB of scratch (ingest pending lists them)`,
    );
  const files = r.ingest?.files ?? r.plan?.files ?? [];
  for (const f of files) out(`  ${fileLine(f, codec)}`);
  if (r.dryRun) {
    if (r.plan?.memtableFlushNeeded === true) out('  a memtable holds data in these ranges: ingesting would flush it first');
    out(
      r.policy.ingest
        ? `dry run: nothing linked; --on-conflict ${r.policy.onConflict} would ingest ${files.length} file(s)${r.policy.rowsHeldBack > 0 ? `, holding back ${r.policy.rowsHeldBack} conflicting row(s)` : ''}${unchangedNote(r)}`
        : `dry run: nothing linked; --on-conflict abort would ingest nothing (${s.conflicts} conflicts); the plan shows the files as they would go in`,
    );
  } else if (r.ingest !== null) {
    out(
      `ingested ${r.ingest.files.length} file(s) in ${r.ingest.seconds}s; last sequence ${r.ingest.lastSequence}` +
        `${r.policy.rowsHeldBack > 0 ? `; ${r.policy.rowsHeldBack} conflicting row(s) skipped` : ''}${r.ingest.memtableFlushes > 0 ? `; ${r.ingest.memtableFlushes} memtable flush(es)` : ''}` +
        unchangedNote(r),
    );
  }
  if (r.ingest === null && !r.dryRun && r.policy.ingest) {
    out(r.policy.rowsUnchangedLeftOut > 0 ? `nothing to ingest: every row holds the live value already` : 'nothing to ingest');
  }
  const space = r.space === undefined || r.space === null ? null : spaceLine(r.space);
  if (space !== null) out(space);
}

/** What the space policy did, in one line. */
function spaceLine(s: SpaceSettleResult): string | null {
  if (s.error !== null) return `warning: the import is in, but the space policy stopped: ${s.error.message}`;
  const amp = `space amplification ${s.amplificationBefore.toFixed(2)}x -> ${s.amplificationAfter.toFixed(2)}x`;
  const budget = s.budgetExhausted ? '; --compact-budget ran out first' : '';
  if (!s.steps.includes('amplification') && !s.steps.includes('replaced')) return budget === '' ? null : `${amp}${budget}`;
  return `${amp}: compacted ${mib(s.tableBytesBefore)} -> ${mib(s.tableBytesAfter)} MiB in ${s.seconds}s${budget}`;
}

/** "; N unchanged row(s) left out", or nothing. */
function unchangedNote(r: DbImportResult): string {
  const n = r.policy.rowsUnchangedLeftOut;
  return n > 0 ? `; ${n} unchanged row(s) left out (${r.policy.unchangedFilesLeftOut} file(s) whole)` : '';
}

function fileLine(f: DbImportFile, codec: DbTextCodec): string {
  const span = `[${codec.displayKey(Buffer.from(f.smallestHex, 'hex'))} .. ${codec.displayKey(Buffer.from(f.largestHex, 'hex'))}${f.largestExclusive ? ')' : ']'}`;
  const target = f.fileNumber !== null ? ` -> ${String(f.fileNumber).padStart(6, '0')}.sst` : '';
  return `${f.file ?? '(replace-range tombstones)'}: L${f.level} seqno ${f.globalSeqno} ${span} ${f.sizeBytes} bytes${target}`;
}

/** Prints a check's result (--json: the document; else one line) and fails with exit 3 on conflicts. */
export function printCheckResult(result: DbCheckResult, o: { json?: boolean; quiet?: boolean }, fail = true): void {
  const s = result.report.summary;
  if (o.json === true) {
    process.stdout.write(`${JSON.stringify(dbCheckJson(result))}\n`);
  } else if (o.quiet !== true) {
    process.stdout.write(
      `checked ${s.sstKeys} rows against ${result.db}: ${s.new} new, ${s.unchanged} unchanged, ${s.conflicts} conflicting ` +
        `(${s.strategy} scan, ${s.scanSeconds}s${result.reportPath !== null ? `, report in ${result.reportPath}` : ''})\n`,
    );
  }
  const failure = conflictFailure(result);
  if (fail && failure !== null) throw failure;
}

function mib(bytes: number): string {
  return (bytes / (1 << 20)).toFixed(1);
}

function pendingLine(j: PendingJobSummary): string {
  return `inputs ${j.inputs.join(', ')}, idle ${(j.ageSeconds / 86400).toFixed(1)} d, ${mib(j.scratchBytes)} MiB`;
}
