/**
 * Option values from settings, by an option table (optionTable.ts), without a command-line
 * library: how a front end that is not a command line (the server's query string) reads the
 * pipeline's options with the same defaults, choices and parsers as the CLI's commander does.
 *
 * Contract:
 * - A setting names an option by its long name without dashes or `no-` (`on-conflict`,
 *   `create-if-missing`). A value option takes text; a flag takes true (`--name`) or false
 *   (`--no-name`); a flag the table declares only one way ignores the other (as a command
 *   line that never says it would). optionKindOf tells a front end which is which.
 * - Settings apply in order; a later one replaces an earlier one.
 * - Values are keyed by camelCase name and defaulted exactly as optionTable.ts describes.
 * - Errors are IngestError('USAGE'): an unknown name, a value outside `choices`, a flag given
 *   text or a value option given none, a required option missing. Their messages start with
 *   `what` ("import options: ...") and quote the option's flags as commander's do; an error
 *   from an option's own `parse` passes through as it is (it names the option already).
 */
import { IngestError, assert } from '../../util/errors';
import { OptionDef } from './optionTable';

export interface OptionSetting {
  name: string;
  value: string | boolean;
}

export type OptionKind = 'value' | 'flag';

/** One long name's declarations: `--name ...` and/or `--no-name`. */
interface NamedOption {
  positive?: OptionDef;
  negative?: OptionDef;
}

/** "--no-verify-checksums" → { name: "verify-checksums", negated: true }; "--key <spec>" → "key". */
export function longNameOf(flags: string): { name: string; negated: boolean } {
  const long = flags.split(/[ ,]+/).find((f) => f.startsWith('--'));
  assert(long !== undefined, `option flags without a long name: ${flags}`);
  const negated = long.startsWith('--no-');
  return { name: long.slice(negated ? 5 : 2), negated };
}

function camelCase(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

/** `--x <v>` or `--x [v]`: takes a value (optional in brackets). */
function takesValue(def: OptionDef): boolean {
  return /[<[]/.test(def.flags);
}

/** Each table's declarations by long name, built once per table (the server reads one per query parameter). */
const namedOptionsOf = new WeakMap<readonly OptionDef[], Map<string, NamedOption>>();

function namedOptions(defs: readonly OptionDef[]): Map<string, NamedOption> {
  const built = namedOptionsOf.get(defs);
  if (built !== undefined) return built;
  const byName = new Map<string, NamedOption>();
  for (const def of defs) {
    const { name, negated } = longNameOf(def.flags);
    const entry = byName.get(name) ?? {};
    if (negated) entry.negative = def;
    else entry.positive = def;
    byName.set(name, entry);
  }
  namedOptionsOf.set(defs, byName);
  return byName;
}

/** Whether `name` is a value option or a flag in `defs`, or null when the table has no such option. */
export function optionKindOf(defs: readonly OptionDef[], name: string): OptionKind | null {
  const entry = namedOptions(defs).get(name);
  if (entry === undefined) return null;
  return entry.positive !== undefined && takesValue(entry.positive) ? 'value' : 'flag';
}

function defaultsOf(byName: Map<string, NamedOption>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, { positive, negative }] of byName) {
    if (positive?.defaultValue !== undefined) values[camelCase(name)] = positive.defaultValue;
    else if (negative !== undefined && positive === undefined) values[camelCase(name)] = true;
  }
  return values;
}

function valueOf(def: OptionDef, text: string, what: string): string | number {
  if (def.choices !== undefined && !def.choices.includes(text))
    throw new IngestError(
      'USAGE',
      `${what}: option '${def.flags}' argument '${text}' is invalid. Allowed choices are ${def.choices.join(', ')}.`,
    );
  return def.parse !== undefined ? def.parse(text) : text;
}

/** The values of `settings` read by `defs`; see the module comment. */
export function parseOptionValues<T>(defs: readonly OptionDef[], settings: readonly OptionSetting[], what: string): T {
  const byName = namedOptions(defs);
  const values = defaultsOf(byName);
  const given = new Set<string>();
  for (const { name, value } of settings) {
    const entry = byName.get(name);
    if (entry === undefined) throw new IngestError('USAGE', `${what}: unknown option '--${name}'`);
    const key = camelCase(name);
    if (entry.positive !== undefined && takesValue(entry.positive)) {
      if (typeof value !== 'string') throw new IngestError('USAGE', `${what}: option '${entry.positive.flags}' takes a value`);
      values[key] = valueOf(entry.positive, value, what);
    } else {
      if (typeof value !== 'boolean') throw new IngestError('USAGE', `${what}: option '--${name}' is a flag`);
      const def = value ? entry.positive : entry.negative;
      if (def === undefined) continue;
      values[key] = value;
    }
    given.add(name);
  }
  for (const [name, { positive }] of byName) {
    if (positive?.required === true && !given.has(name))
      throw new IngestError('USAGE', `${what}: required option '${positive.flags}' not specified`);
  }
  return values as T;
}
