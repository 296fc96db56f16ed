/**
 * The CLI's side of the pipeline's options: the option tables themselves are data below the CLI
 * (src/ingest/options/optionTable.ts, shared with the server); here they become commander
 * options (`addOptions`), and the options only a command line has are declared: progress on
 * stderr, resuming an interrupted run, --json and --quiet. Each command adds the groups it takes,
 * in the order its help lists them, so no command copies another's options and registration
 * order does not matter.
 *
 * Contract: `dbImportOptionsOf` is the library's (src/ingest/options/importSettings.ts) plus the
 * codec that shows keys the way the import's key spec reads them (for the command's output).
 */
import { Command, Option } from 'commander';
import {
  ConflictCheckOptionValues,
  DbPolicyOptionValues,
  ImportOptionValues,
  OptionDef,
  PipelineOptionValues,
} from '../../src/ingest/options/optionTable';
import { dbImportOptionsOf as libraryDbImportOptionsOf } from '../../src/ingest/options/importSettings';
import { STEP_CHECKPOINTS_FROM_INPUT_BYTES } from '../../src/ingest/resume/jobSteps';
import { DbImportMode, DbImportOptions } from '../../src/ingest/importIntoDb';
import { DbTextCodec } from './dbText';

export { CONFLICT_CHECK_OPTIONS, DB_POLICY_OPTIONS, IMPORT_OPTIONS, OptionDef } from '../../src/ingest/options/optionTable';
export { importSettingsOf } from '../../src/ingest/options/importSettings';
import { parseByteSize } from '../../src/ingest/options/optionText';

export { parseByteSize };

export function addOptions(cmd: Command, defs: readonly OptionDef[]): Command {
  for (const def of defs) {
    const option = new Option(def.flags, def.description);
    if (def.choices !== undefined) option.choices(def.choices);
    if (def.parse !== undefined) option.argParser(def.parse);
    if (def.defaultValue !== undefined) option.default(def.defaultValue);
    if (def.required === true) option.makeOptionMandatory();
    cmd.addOption(option);
  }
  return cmd;
}

/**
 * Progress for scripts, in every pipeline command (not in the server's query: a server reports
 * nothing on the client's stderr).
 */
export const PROGRESS_OPTION: OptionDef = {
  flags: '--progress <mode>',
  description: 'progress on stderr: auto (a bar on a TTY), json (NDJSON events, at most one a second), none',
  choices: ['auto', 'json', 'none'],
  defaultValue: 'auto',
};

/** `import`'s own: resuming an interrupted run, and the scratch space it may take (docs/import.md). */
export const RESUME_OPTIONS: readonly OptionDef[] = [
  {
    flags: '--no-resume',
    description: 'start over: discard a pending interrupted import of these inputs (default: resume it)',
  },
  {
    flags: '--disk-quota <size>',
    description: 'scratch space (runs and SSTs) the import may use; checked before parsing against the estimate and the free space',
  },
  {
    flags: '--pending-max-age <age>',
    description:
      'with --db: discard other pending imports in the database idle longer than this (3d, 12h, 90m, 600s, or never; default 3d)',
  },
  {
    flags: '--max-space-amp <x>',
    description:
      'with --db: before exiting, compact when the database holds more than X times its last level (the space policy, docs/import.md; default 1.3; off: never)',
  },
  {
    flags: '--compact-budget <time>',
    description: 'with --db: time in which the space policy may start compactions (10m default; 90s, 2h)',
  },
  {
    flags: '--step-checkpoints-from <size>',
    description: `input size from which each parse range and SST is checkpointed; a smaller import is redone whole after a kill (default ${STEP_CHECKPOINTS_FROM_INPUT_BYTES >> 20}MiB; 0: always)`,
  },
];

/** Option values of PROGRESS_OPTION and RESUME_OPTIONS. */
export interface ResumeCliOptions {
  progress?: string;
  resume?: boolean;
  diskQuota?: string;
  stepCheckpointsFrom?: string;
  pendingMaxAge?: string;
  maxSpaceAmp?: string;
  compactBudget?: string;
}

/** A distributed import (`import --db DIR --cluster URL --shared-dir SHARED`, docs/distributed.md). */
export const CLUSTER_OPTIONS: readonly OptionDef[] = [
  { flags: '--cluster <url>', description: 'with --db: build the import with `ingest worker` processes of this Redis (redis://host:port)' },
  { flags: '--shared-dir <dir>', description: 'with --cluster: the directory the workers share with this command (same path everywhere)' },
  { flags: '--task-size <size>', description: 'with --cluster: input bytes per map task (default 256MiB)' },
  { flags: '--reduce-tasks <n>', description: 'with --cluster: key ranges, one reduce task each (default: one per task size of input)' },
];

/** `import --db --cluster`'s own (cli/commands/importCluster.ts). */
export interface ClusterCliOptions {
  cluster?: string;
  sharedDir?: string;
  taskSize?: string;
  reduceTasks?: string;
}

/** Everything `import --db` and `plan` take. */
export interface DbImportCliOptions
  extends ImportCliOptions, ConflictCheckCliOptions, DbPolicyCliOptions, ResumeCliOptions, ClusterCliOptions {
  db: string;
  outputDir?: string;
}

/** The --json and --quiet every pipeline command has. */
export interface OutputCliOptions {
  json?: boolean;
  quiet?: boolean;
}

/** Option values of IMPORT_OPTIONS, plus --json and --quiet. */
export type ImportCliOptions = ImportOptionValues & OutputCliOptions;
export type ConflictCheckCliOptions = ConflictCheckOptionValues;
export type DbPolicyCliOptions = DbPolicyOptionValues;
export type PipelineCliOptions = PipelineOptionValues & OutputCliOptions;

/** The DbImport options of a command's parsed options, and the codec that shows keys as its key spec reads them. */
export function dbImportOptionsOf(
  inputs: string[],
  o: PipelineCliOptions,
  mode: DbImportMode,
): { options: DbImportOptions; codec: DbTextCodec } {
  const options = libraryDbImportOptionsOf(inputs, o, mode);
  // The import's key spec shows keys here too: --replace-range bounds in, file bounds out.
  return { options, codec: new DbTextCodec({ keySpec: options.import.key }) };
}

/** --disk-quota in bytes, or undefined. */
export function diskQuotaOf(o: ResumeCliOptions): number | undefined {
  return o.diskQuota === undefined ? undefined : parseByteSize(o.diskQuota, '--disk-quota');
}

/** --step-checkpoints-from, in bytes (undefined: the library's default). */
export function stepCheckpointsOf(o: ResumeCliOptions): number | undefined {
  return o.stepCheckpointsFrom === undefined ? undefined : parseByteSize(o.stepCheckpointsFrom, '--step-checkpoints-from');
}

/** What Ctrl-C or SIGTERM says: a resumable import is kept for the next run of the same command. */
export function abandonedMessage(resume: boolean, inputs: readonly string[], dir: string, otherwise: string): string {
  if (!resume || inputs.includes('-')) return otherwise;
  return `the import is kept: run the same command again to resume it (ingest pending ${dir} lists it)`;
}
