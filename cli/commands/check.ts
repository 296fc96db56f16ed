/**
 * `ingest check <inputs...> --db DIR [import options...]`: runs the import pipeline into SSTs,
 * then the conflict scan against the database at --db, and reports; it ingests nothing.
 * docs/conflicts.md documents the options, the report and the summary.
 *
 * The SSTs go to a private temp directory (under --tmp-dir, else the system's) removed at the
 * end, unless --output-dir keeps them. Every `ingest import` option is accepted and means the
 * same (they are copied from that command, so the two cannot drift apart).
 *
 * Output: with --json one object {"import": <import summary>, "check": <conflict summary>,
 * "report": <path or null>} on stdout; otherwise one human line unless --quiet. Exit codes: 0
 * no conflicts; 3 conflicts (after the report is written); 2 bad input or usage; 1 anything else.
 *
 * For `ingest import --db`, the same pieces are exported: addConflictCheckOptions (the options
 * shared with import) and checkImportedSsts (engine + SST paths → report, written when asked).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Command, Option } from 'commander';
import { Engine } from '../../src/engine/engine';
import { currentFileName } from '../../src/engine/fileNames';
import { CsvImport, ImportSummary } from '../../src/ingest/importer';
import { KeySpec, parseKeySpecText } from '../../src/ingest/rows/keySpec';
import { Progress } from '../../src/ingest/progress';
import { checkSstConflicts } from '../../src/conflict/checkSstConflicts';
import { ConflictReport, ConflictStrategy, DEFAULT_MAX_REPORTED, writeConflictReport } from '../../src/conflict/report';
import { RowOriginIndex } from '../../src/conflict/rowOrigins';
import { IngestError } from '../../src/util/errors';
import { registerImportCommand, toImportOptions } from './import';

/** The conflict options `check` and `import --db` share. */
export interface ConflictCheckCliOptions {
  conflictStrategy: ConflictStrategy;
  report?: string;
  maxReported: number;
}

type ImportCliOptions = Parameters<typeof toImportOptions>[1];

interface CheckCliOptions extends ConflictCheckCliOptions, Omit<ImportCliOptions, 'outputDir'> {
  db: string;
  outputDir?: string;
}

/** Import options `check` does not take from `import` (it defines its own). */
const OWN_OPTIONS = new Set(['--output-dir', '--json', '--quiet']);

function nonNegativeInt(name: string): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new IngestError('USAGE', `${name} must be a non-negative integer, got "${v}"`);
    return n;
  };
}

export function addConflictCheckOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--conflict-strategy <s>', 'seek (interleaved SeekGE), get (point lookups), or auto (by the engine bytes in range vs the SSTs)').choices(['auto', 'seek', 'get']).default('auto'))
    .option('--report <file>', 'write the JSON conflict report here')
    .option('--max-reported <n>', 'conflicts listed in the report (counts stay exact)', nonNegativeInt('--max-reported'), DEFAULT_MAX_REPORTED);
}

/**
 * The check for SSTs an import just wrote: key display from the import's --key spec, row
 * sources from origins files when the import wrote them. Writes the report when asked.
 */
export function checkImportedSsts(
  engine: Engine,
  sstPaths: readonly string[],
  keySpecText: string,
  o: ConflictCheckCliOptions,
  extra: { collectConflictingKeys?: boolean } = {},
): ConflictReport {
  const keySpec = KeySpec.forKeyFields(parseKeySpecText(keySpecText));
  const origins = RowOriginIndex.openIfPresent(sstPaths);
  try {
    const report = checkSstConflicts(engine, sstPaths, {
      strategy: o.conflictStrategy,
      maxReported: o.maxReported,
      formatKey: (k) => keySpec.format(k),
      sourceOf: origins === null ? undefined : (k) => origins.sourceOf(k),
      collectConflictingKeys: extra.collectConflictingKeys,
    });
    if (o.report !== undefined) writeConflictReport(o.report, report);
    return report;
  } finally {
    origins?.close();
  }
}

export function registerCheckCommand(program: Command): void {
  const cmd = program
    .command('check')
    .description('import CSV files into temporary SSTs and check them against a database for conflicts (ingests nothing)')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly')
    .requiredOption('--db <dir>', 'the database to check against')
    .option('--output-dir <dir>', 'keep the SSTs here (default: a temp directory removed afterwards)');
  addConflictCheckOptions(cmd);
  for (const option of importOptions()) cmd.addOption(option);
  cmd
    .option('--json', 'print one JSON object {import, check, report} on stdout')
    .option('--quiet', 'no progress and no human summary')
    .action(async (inputs: string[], o: CheckCliOptions) => {
      if (!fs.existsSync(currentFileName(o.db))) throw new IngestError('USAGE', `no database at ${o.db}`);
      let tempDir: string | null = null;
      let outputDir = o.outputDir;
      if (outputDir === undefined) {
        const tmpRoot = o.tmpDir ?? os.tmpdir();
        fs.mkdirSync(tmpRoot, { recursive: true });
        tempDir = fs.mkdtempSync(path.join(tmpRoot, 'ingest-check-'));
        outputDir = tempDir;
      }
      const options = toImportOptions(inputs, { ...o, outputDir });
      // Origins side files give each reported conflict its input file and line.
      options.writeRowOrigins = true;
      options.progress = Progress.forStderr(o.quiet === true);
      const job = new CsvImport(options);
      const onSignal = (): void => {
        job.cleanupSync();
        if (tempDir !== null) fs.rmSync(tempDir, { recursive: true, force: true });
        process.stderr.write('\ninterrupted: check abandoned\n');
        process.exit(130);
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        const summary: ImportSummary = await job.run();
        const engine = await Engine.open(o.db, { createIfMissing: false });
        let report: ConflictReport;
        try {
          report = checkImportedSsts(
            engine,
            summary.outputFiles.map((f) => f.path),
            o.key,
            o,
          );
        } finally {
          await engine.close();
        }
        const s = report.summary;
        if (o.json === true) {
          process.stdout.write(`${JSON.stringify({ import: summary, check: s, report: o.report ?? null })}\n`);
        } else if (o.quiet !== true) {
          process.stdout.write(
            `checked ${s.sstKeys} rows against ${o.db}: ${s.new} new, ${s.unchanged} unchanged, ${s.conflicts} conflicting ` +
              `(${s.strategy} scan, ${s.scanSeconds}s${o.report !== undefined ? `, report in ${o.report}` : ''})\n`,
          );
        }
        if (s.conflicts > 0) {
          const first = report.conflicts[0];
          const example = first !== undefined ? `; first: key ${first.key}${first.source !== null ? ` (${first.source.file} line ${first.source.line})` : ''}` : '';
          throw new IngestError('CONFLICT', `${s.conflicts} key(s) would change a live value in ${o.db}${example}`);
        }
      } finally {
        process.removeListener('SIGINT', onSignal);
        process.removeListener('SIGTERM', onSignal);
        if (tempDir !== null) fs.rmSync(tempDir, { recursive: true, force: true });
      }
    });
}

/** `ingest import`'s options, minus the ones check defines itself. */
export function importOptions(): Option[] {
  const scratch = new Command();
  registerImportCommand(scratch);
  const imp = scratch.commands.find((c) => c.name() === 'import');
  if (imp === undefined) throw new Error('the import command is not registered');
  return imp.options.filter((opt) => opt.long === undefined || !OWN_OPTIONS.has(opt.long));
}
