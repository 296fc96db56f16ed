/**
 * `ingest import|check|plan <inputs...> --server URL [--token-file F]`: the import pipeline with
 * its CPU-heavy half on this machine and its database half on the server, so the server's cores
 * keep serving. Here: parse, sort and write the SSTs (src/ingest/importer.ts) into a private temp
 * directory, each with its row-origins file; there: each file is staged on its own (PUT
 * /v1/imports/{id}/files/{name}, verified on arrival, retried once when the connection fails),
 * then one POST /v1/imports/{id}/commit runs the conflict check against the live engine, applies
 * the policy and lands them all at once (docs/serve.md). An import with no SST at all (a CSV
 * without rows) goes as an empty POST /v1/imports/sst: there is nothing to stage.
 *
 * The staged import's id is random (16 hex characters) per run, not derived from the inputs: a
 * rerun parses and sorts again into new files whose bytes need not match the last run's (a
 * derived id would meet them as different files, 409), and two runs of the same inputs must not
 * share an import. What a killed run staged is listed by `ingest pending --server URL`, removed
 * with its --discard, and expires on the server (--staged-max-age); a run that fails, or a plan
 * or check (whose commit keeps the import), deletes its own at the end.
 *
 * Output and exit codes are those of `--db`: the same `--json` document with this machine's
 * import summary as "import", `--report FILE` written here from the server's report (in
 * --report-format; an NDJSON one is written from the whole report the server sent), the same
 * human lines, exit 3 on conflicts under abort (or a check that found some), 2 bad input or
 * usage (a server's 400 included), 1 anything else (an unreachable server included).
 * The temp directory goes at the end, on failure and on Ctrl-C.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { CsvImport, ImportSummary } from '../../src/ingest/importer';
import { DbCheckResult, DbImportMode, DbImportResult } from '../../src/ingest/importIntoDb';
import { Progress } from '../../src/ingest/progress';
import { ConflictReport } from '../../src/conflict/report';
import { checkReportOptions, writeConflictReportAs } from '../../src/conflict/reportStream';
import { ServerClient, UploadFile } from '../serverClient';
import { IngestError } from '../../src/util/errors';
import { DbTextCodec } from './dbText';
import { ClusterCliOptions, PipelineCliOptions, importSettingsOf } from './importOptions';
import { buildOnCluster, keepsTasks } from './clusterBuild';
import { TargetOptions, withServer } from './serverTarget';
import { runInterruptible } from './interrupt';
import { normalizeDialect } from '../../src/ingest/csv/csvDialect';
import { ValueEncoding } from '../../src/ingest/rows/valueEncoding';
import { settleValueEncodingAgainst, valueEncodingText } from '../../src/ingest/valueEncodingFile';
import { VALUE_ENCODING_HEADER } from '../../src/server/valueEncodingHeader';
import { ImportSettings } from '../../src/ingest/options/importSettings';
import { printCheckResult, printImportResult } from './importOutput';

export type RemoteCliOptions = Omit<PipelineCliOptions, 'db'> & TargetOptions & ClusterCliOptions & { json?: boolean; quiet?: boolean };

/** The SSTs and, beside each, its row-origins file when the import wrote one. */
function uploadsOf(summary: ImportSummary): UploadFile[] {
  const files: UploadFile[] = [];
  for (const f of summary.outputFiles) {
    files.push({ name: path.basename(f.path), path: f.path });
    const origins = f.path.replace(/\.sst$/, '.origins');
    if (origins !== f.path && fs.existsSync(origins)) files.push({ name: path.basename(origins), path: origins });
  }
  return files;
}

/**
 * Stages every file under a fresh id and commits them; the commit's document. The import is
 * deleted afterwards unless an import's commit answered (the server removed it then).
 */
async function stageAndCommit(
  client: ServerClient,
  files: readonly UploadFile[],
  query: URLSearchParams,
  headers: Readonly<Record<string, string>>,
): Promise<Record<string, unknown>> {
  if (files.length === 0) return (await client.uploadSsts([], query, headers)).document;
  const id = randomBytes(8).toString('hex');
  let removedByServer = false;
  try {
    for (const file of files) await client.putStagedFile(id, file);
    const { document } = await client.commitStaged(id, query, headers);
    removedByServer = query.get('mode') === 'import';
    return document;
  } finally {
    // Best effort: what it leaves expires on the server.
    if (!removedByServer) await client.deleteStaged(id).catch(() => false);
  }
}

/** The server's parameters for the policy and check options (importQuery.ts reads them as the CLI's). */
function queryOf(o: RemoteCliOptions, mode: DbImportMode): URLSearchParams {
  const q = new URLSearchParams({ mode, key: o.key, 'conflict-strategy': o.conflictStrategy, 'max-reported': String(o.maxReported) });
  if (mode === 'check') return q;
  if (o.onConflict !== undefined) q.set('on-conflict', o.onConflict);
  // A bare --replace-range is the import's own span: "..", both bounds left to the server.
  if (o.replaceRange !== undefined) q.set('replace-range', o.replaceRange === true ? '..' : o.replaceRange);
  if (o.blockingFlush === false) q.set('blocking-flush', '0');
  return q;
}

/** The run's result as `--db` would have it: the server's document with this machine's summary and report path. */
function resultOf(
  document: Record<string, unknown>,
  summary: ImportSummary,
  mode: DbImportMode,
  o: RemoteCliOptions,
  url: string,
): DbImportResult | DbCheckResult {
  const report = document.conflictReport as ConflictReport;
  if (report === undefined || typeof report !== 'object')
    throw new IngestError('IO', `the server at ${url} answered without a conflict report`);
  const reportPath = o.report ?? null;
  if (mode === 'check')
    return { mode: 'check', db: typeof document.db === 'string' ? document.db : url, import: summary, report, reportPath };
  const d = document as unknown as DbImportResult;
  return { ...d, mode, db: d.db, import: summary, report, reportPath };
}

/** The SSTs on the server: staged one by one, committed once; the result as `--db` would have it. */
function landOnServer(o: RemoteCliOptions, mode: DbImportMode, summary: ImportSummary): Promise<DbImportResult | DbCheckResult> {
  return withServer(o, async (client: ServerClient) => {
    const encoding: Record<string, string> = {};
    if (summary.valueEncoding !== undefined) encoding[VALUE_ENCODING_HEADER] = valueEncodingText(summary.valueEncoding);
    const document = await stageAndCommit(client, uploadsOf(summary), queryOf(o, mode), encoding);
    return resultOf(document, summary, mode, o, client.url);
  });
}

/**
 * `--cluster URL --shared-dir DIR` with `--server`: the SSTs built by the cluster's workers
 * (src/ingest/distributed/coordinator.ts), staged on the server from the shared directory and
 * committed once there. The import's files go afterwards unless a rerun could use them.
 */
async function runRemoteClusterImport(
  o: RemoteCliOptions,
  mode: DbImportMode,
  settings: ImportSettings,
  codec: DbTextCodec,
): Promise<void> {
  // The server's database may hold data: row origins let its report name files and lines.
  const distributed = await buildOnCluster(o, { ...settings, writeRowOrigins: true });
  let keep = false;
  try {
    const result = await runInterruptible(
      { run: () => landOnServer(o, mode, distributed.summary), cleanupSync: () => undefined },
      `${mode} abandoned`,
    );
    if (result.mode !== 'check') result.distributed = { importId: distributed.importId, ...distributed.phases };
    if (o.report !== undefined) writeConflictReportAs(o.report, result.report, o.reportFormat);
    if (result.mode === 'check') printCheckResult(result, o);
    else printImportResult(result, o, codec);
  } catch (e) {
    keep = keepsTasks(e);
    throw e;
  } finally {
    if (!keep) await distributed.remove();
  }
}

/**
 * The import's settings with the value encoding settled against the server's database, as a --db
 * import settles it against its own (valueEncodingFile.ts): the server's stats name what its
 * database records and whether it holds data. The upload carries the result, which the server
 * records (or refuses, 400, when its record says otherwise).
 */
async function settledOnServer(settings: ImportSettings, o: RemoteCliOptions): Promise<ImportSettings> {
  const stats = await withServer(o, (client: ServerClient) => client.stats());
  const server = stats.server as { valueEncoding?: { recorded: ValueEncoding | null; holdsData: boolean } } | undefined;
  const remote = server?.valueEncoding;
  if (remote === undefined) return settings;
  const settled = settleValueEncodingAgainst(
    remote.recorded,
    () => remote.holdsData,
    settings.valueFormat,
    normalizeDialect(settings.dialect ?? {}),
    `the server's database`,
  );
  return { ...settings, valueFormat: settled.format, valueSyntax: settled.syntax };
}

export async function runRemoteImport(inputs: string[], o: RemoteCliOptions, mode: DbImportMode): Promise<void> {
  checkReportOptions(o.report, o.reportFormat, o.maxReported);
  const settings = await settledOnServer(importSettingsOf(inputs, o), o);
  const codec = new DbTextCodec({ keySpec: settings.key });
  if (o.cluster !== undefined) return runRemoteClusterImport(o, mode, settings, codec);
  if (o.sharedDir !== undefined || o.taskSize !== undefined || o.reduceTasks !== undefined)
    throw new IngestError('USAGE', '--shared-dir, --task-size and --reduce-tasks go with --cluster');
  const tmpRoot = settings.tmpDir ?? os.tmpdir();
  fs.mkdirSync(tmpRoot, { recursive: true });
  const dir = fs.mkdtempSync(path.join(tmpRoot, 'ingest-client-'));
  const job = new CsvImport({
    ...settings,
    outputDir: dir,
    tmpDir: settings.tmpDir ?? dir,
    writeRowOrigins: true,
    writeSummaryFile: false,
    progress: Progress.forStderr(o.quiet === true),
  });
  const run = async (): Promise<DbImportResult | DbCheckResult> => landOnServer(o, mode, await job.run());
  const cleanupSync = (): void => {
    job.cleanupSync();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const result = await runInterruptible({ run, cleanupSync }, `${mode} abandoned`);
    if (o.report !== undefined) writeConflictReportAs(o.report, result.report, o.reportFormat);
    if (result.mode === 'check') printCheckResult(result, o);
    else printImportResult(result, o, codec);
  } finally {
    cleanupSync();
  }
}
