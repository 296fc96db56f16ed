/**
 * The import pipeline's commands (`import`, `check`, `plan`) register on their own, in any order,
 * and take the same import options from the one table (src/ingest/options/optionTable.ts, made commander options by cli/commands/importOptions.ts).
 */
import { Command } from 'commander';
import { registerCheckCommand } from '../../cli/commands/check';
import { registerImportCommand } from '../../cli/commands/import';
import { registerPlanCommand } from '../../cli/commands/plan';
import {
  CLUSTER_OPTIONS,
  CONFLICT_CHECK_OPTIONS,
  DB_POLICY_OPTIONS,
  IMPORT_OPTIONS,
  OptionDef,
  PROGRESS_OPTION,
  RESUME_OPTIONS,
} from '../../cli/commands/importOptions';
import { SERVER_OPTIONS } from '../../cli/commands/serverTarget';

type Register = (program: Command) => void;
const REGISTER: Record<string, Register> = { import: registerImportCommand, check: registerCheckCommand, plan: registerPlanCommand };

function longFlags(program: Command, name: string): string[] {
  const cmd = program.commands.find((c) => c.name() === name);
  if (cmd === undefined) throw new Error(`${name} is not registered`);
  return cmd.options.map((o) => o.long ?? '');
}

function flagsOf(defs: readonly OptionDef[]): string[] {
  return defs.map((d) => d.flags.split(' ')[0]);
}

test.each([[['import', 'check', 'plan']], [['plan', 'check', 'import']], [['check']], [['plan']]])(
  'registering %j gives each command its whole option list',
  (order) => {
    const program = new Command();
    for (const name of order) REGISTER[name](program);
    const expected: Record<string, string[]> = {
      import: [
        '--output-dir',
        ...flagsOf(IMPORT_OPTIONS),
        '--json',
        '--quiet',
        ...flagsOf([PROGRESS_OPTION, ...RESUME_OPTIONS]),
        '--db',
        ...flagsOf(SERVER_OPTIONS),
        ...flagsOf(CONFLICT_CHECK_OPTIONS),
        ...flagsOf(DB_POLICY_OPTIONS),
        '--dry-run',
        ...flagsOf(CLUSTER_OPTIONS),
      ],
      check: [
        '--db',
        ...flagsOf(SERVER_OPTIONS),
        '--output-dir',
        ...flagsOf(CONFLICT_CHECK_OPTIONS),
        ...flagsOf(IMPORT_OPTIONS),
        '--json',
        '--quiet',
        '--progress',
      ],
      plan: [
        '--db',
        ...flagsOf(SERVER_OPTIONS),
        ...flagsOf(IMPORT_OPTIONS),
        ...flagsOf(CONFLICT_CHECK_OPTIONS),
        ...flagsOf(DB_POLICY_OPTIONS),
        '--json',
        '--quiet',
        '--progress',
      ],
    };
    for (const name of order) expect(longFlags(program, name)).toEqual(expected[name]);
  },
);
