/**
 * The options of an import request, read from its query with the CLI's own option tables
 * (cli/commands/importOptions.ts), so `?key=id:int64&header=1&on-conflict=skip` means exactly
 * what `--key id:int64 --header --on-conflict skip` means, with the same defaults, choices and
 * error messages. A parameter is an option's long name without its dashes; a flag takes 1, true
 * or nothing (present), and 0 or false (its --no- form where it has one, else absent).
 *
 * Refused, because they name paths on the server (a client must not make the server read or
 * write its files): tmp-dir, rejects, report, output-dir, db. The server's own parameters, not
 * import options: mode (import | plan | check; default import), name (what the body is called in
 * messages and row sources; default "request body"), hex.
 */
import { Command, CommanderError } from 'commander';
import {
  CONFLICT_CHECK_OPTIONS,
  DB_POLICY_OPTIONS,
  IMPORT_OPTIONS,
  OptionDef,
  PipelineCliOptions,
  addOptions,
} from '../../cli/commands/importOptions';
import { DbImportMode } from '../ingest/importIntoDb';
import { badRequest } from './httpErrors';

const SERVER_SIDE_PATHS = new Set(['tmp-dir', 'rejects', 'report', 'output-dir', 'db']);
const SERVER_PARAMETERS = new Set(['mode', 'name', 'hex']);
const MODES: readonly DbImportMode[] = ['import', 'plan', 'check'];
export const MAX_BODY_NAME_CHARS = 256;

export interface ImportRequest {
  mode: DbImportMode;
  /** The body's name in messages. */
  name: string;
  options: Omit<PipelineCliOptions, 'db'>;
}

const ALLOWED_DEFS: readonly OptionDef[] = [...IMPORT_OPTIONS, ...CONFLICT_CHECK_OPTIONS, ...DB_POLICY_OPTIONS].filter(
  (d) => !SERVER_SIDE_PATHS.has(longNameOf(d.flags)),
);

/** "--no-verify-checksums" → "verify-checksums"; "--key <spec>" → "key". */
function longNameOf(flags: string): string {
  const long = flags.split(/[ ,]+/).find((f) => f.startsWith('--')) ?? flags;
  return long.replace(/^--(no-)?/, '');
}

function commandForQuery(): Command {
  const cmd = new Command('import')
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined })
    .allowExcessArguments(false);
  return addOptions(cmd, ALLOWED_DEFS);
}

/** The argv the query stands for. */
function argvOf(cmd: Command, query: Map<string, Buffer>): string[] {
  const argv: string[] = [];
  for (const [name, raw] of query) {
    if (SERVER_PARAMETERS.has(name)) continue;
    if (SERVER_SIDE_PATHS.has(name)) throw badRequest(`query parameter ${name} names a path on the server and is not taken`);
    const value = raw.toString('utf8');
    const positive = cmd.options.find((o) => o.long === `--${name}`);
    const negative = cmd.options.find((o) => o.long === `--no-${name}`);
    if (positive === undefined && negative === undefined) throw badRequest(`unknown import option ${name}`);
    const isFlag = positive === undefined || positive.isBoolean();
    if (!isFlag) {
      argv.push(`--${name}`, value);
    } else if (value === '' || value === '1' || value === 'true') {
      if (positive !== undefined) argv.push(`--${name}`);
    } else if (value === '0' || value === 'false') {
      if (negative !== undefined) argv.push(`--no-${name}`);
    } else {
      throw badRequest(`query parameter ${name} is a flag: 1, true, 0 or false, got "${value}"`);
    }
  }
  return argv;
}

export function importRequestOf(query: Map<string, Buffer>, defaultName: string): ImportRequest {
  const modeText = query.get('mode')?.toString('utf8') ?? 'import';
  const mode = MODES.find((m) => m === modeText);
  if (mode === undefined) throw badRequest(`mode must be import, plan or check, got "${modeText}"`);
  const name = query.get('name')?.toString('utf8') ?? defaultName;
  if (name.length === 0 || name.length > MAX_BODY_NAME_CHARS) throw badRequest(`name must be 1..${MAX_BODY_NAME_CHARS} characters`);
  const cmd = commandForQuery();
  try {
    cmd.parse(argvOf(cmd, query), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) throw badRequest(`import options: ${err.message.replace(/^error: /, '')}`);
    throw err;
  }
  return { mode, name, options: cmd.opts<Omit<PipelineCliOptions, 'db'>>() };
}
