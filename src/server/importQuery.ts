/**
 * The options of an import request, read from its query with the pipeline's option tables
 * (src/ingest/options/optionTable.ts, which the CLI's flags are made from too), so `?key=id:int64&header=1&on-conflict=skip` means exactly
 * what `--key id:int64 --header --on-conflict skip` means, with the same defaults, choices and
 * error messages. A parameter is an option's long name without its dashes; a flag takes 1, true
 * or nothing (present), and 0 or false (its --no- form where it has one, else absent).
 *
 * Bounded by the server's limits (checkImportBounds): threads, memory, file and block sizes,
 * kept rows; a request past one is 400 naming the option and the limit.
 *
 * Refused, because they name paths on the server (a client must not make the server read or
 * write its files): tmp-dir, rejects, report, output-dir, db. Not taken either: report-format,
 * which goes with report (the answer holds the report as JSON; the CLI writes it as asked). The server's own parameters, not
 * import options: mode (import | plan | check; default import), name (what the body is called in
 * messages and row sources; default "request body"), hex.
 */
import { DbImportMode } from '../ingest/importIntoDb';
import { CONFLICT_CHECK_OPTIONS, DB_POLICY_OPTIONS, IMPORT_OPTIONS, OptionDef, PipelineOptionValues } from '../ingest/options/optionTable';
import { OptionSetting, longNameOf, optionKindOf, parseOptionValues } from '../ingest/options/optionParser';
import { parseByteSize } from '../ingest/options/optionText';
import { badRequest } from './httpErrors';
import { ServerLimits } from './limits';

const SERVER_SIDE_PATHS = new Set(['tmp-dir', 'rejects', 'report', 'output-dir', 'db']);
const SERVER_PARAMETERS = new Set(['mode', 'name', 'hex']);
const MODES: readonly DbImportMode[] = ['import', 'plan', 'check'];
export const MAX_BODY_NAME_CHARS = 256;

export interface ImportRequest {
  mode: DbImportMode;
  /** The body's name in messages. */
  name: string;
  options: Omit<PipelineOptionValues, 'db'>;
}

/** Options that only go with one the server refuses (an unknown option here). */
const CLIENT_SIDE_ONLY = new Set(['report-format']);

const ALLOWED_DEFS: readonly OptionDef[] = [...IMPORT_OPTIONS, ...CONFLICT_CHECK_OPTIONS, ...DB_POLICY_OPTIONS].filter(
  (d) => !SERVER_SIDE_PATHS.has(longNameOf(d.flags).name) && !CLIENT_SIDE_ONLY.has(longNameOf(d.flags).name),
);

/** The settings the query stands for: a flag's 1/true/empty is set, 0/false its --no- form. */
function settingsOf(query: Map<string, Buffer>): OptionSetting[] {
  const settings: OptionSetting[] = [];
  for (const [name, raw] of query) {
    if (SERVER_PARAMETERS.has(name)) continue;
    if (SERVER_SIDE_PATHS.has(name)) throw badRequest(`query parameter ${name} names a path on the server and is not taken`);
    const value = raw.toString('utf8');
    const kind = optionKindOf(ALLOWED_DEFS, name);
    if (kind === null) throw badRequest(`unknown import option ${name}`);
    if (kind === 'value') settings.push({ name, value });
    else if (value === '' || value === '1' || value === 'true') settings.push({ name, value: true });
    else if (value === '0' || value === 'false') settings.push({ name, value: false });
    else throw badRequest(`query parameter ${name} is a flag: 1, true, 0 or false, got "${value}"`);
  }
  return settings;
}

/** An option's value past the server's bound: 400 naming both. */
function overLimit(option: string, text: string, bound: string): never {
  throw badRequest(`import option ${option}=${text} is over this server's limit (${bound})`);
}

/**
 * The server's bounds on the options a request chose (ServerLimits): a request may not size
 * threads, memory or files so that one import takes the server down. Sizes are parsed here as
 * the import will parse them (bad text: the option's own USAGE message).
 */
export function checkImportBounds(o: Omit<PipelineOptionValues, 'db'>, limits: ServerLimits): void {
  for (const [option, threads] of [
    ['threads', o.threads],
    ['merge-threads', o.mergeThreads],
  ] as const) {
    if (threads !== undefined && threads > limits.maxImportThreads)
      overLimit(option, String(threads), `at most ${limits.maxImportThreads}`);
  }
  const memory = parseByteSize(o.memoryLimit, '--memory-limit');
  if (memory > limits.maxImportMemoryBytes) overLimit('memory-limit', o.memoryLimit, `at most ${limits.maxImportMemoryBytes >> 20} MiB`);
  const target = parseByteSize(o.targetFileSize, '--target-file-size');
  if (target < limits.minImportTargetFileBytes)
    overLimit('target-file-size', o.targetFileSize, `at least ${limits.minImportTargetFileBytes >> 10} KiB`);
  const block = parseByteSize(o.blockSize, '--block-size');
  if (block < MIN_BLOCK_BYTES || block > limits.maxImportBlockBytes)
    overLimit('block-size', o.blockSize, `${MIN_BLOCK_BYTES >> 10} KiB to ${limits.maxImportBlockBytes >> 10} KiB`);
  for (const [option, rows] of [
    ['max-bad-rows', o.maxBadRows],
    ['max-reported', o.maxReported],
  ] as const) {
    if (rows > limits.maxImportKeptRows) overLimit(option, String(rows), `at most ${limits.maxImportKeptRows}`);
  }
}

/** Blocks smaller than this are all overhead (a 5-byte trailer and an index entry each). */
const MIN_BLOCK_BYTES = 1024;

export function importRequestOf(query: Map<string, Buffer>, defaultName: string, limits: ServerLimits): ImportRequest {
  const modeText = query.get('mode')?.toString('utf8') ?? 'import';
  const mode = MODES.find((m) => m === modeText);
  if (mode === undefined) throw badRequest(`mode must be import, plan or check, got "${modeText}"`);
  const name = query.get('name')?.toString('utf8') ?? defaultName;
  if (name.length === 0 || name.length > MAX_BODY_NAME_CHARS) throw badRequest(`name must be 1..${MAX_BODY_NAME_CHARS} characters`);
  const options = parseOptionValues<Omit<PipelineOptionValues, 'db'>>(ALLOWED_DEFS, settingsOf(query), 'import options');
  checkImportBounds(options, limits);
  return { mode, name, options };
}
