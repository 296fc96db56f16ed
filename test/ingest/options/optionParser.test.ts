/**
 * The pipeline's options as data (src/ingest/options): the parser the server uses reads the same
 * tables to the same values, defaults and error messages as the CLI's commander does, and the
 * shared text rules refuse what neither front end should take.
 */
import { Command, CommanderError } from 'commander';
import { addOptions } from '../../../cli/commands/importOptions';
import {
  CONFLICT_CHECK_OPTIONS,
  DB_POLICY_OPTIONS,
  IMPORT_OPTIONS,
  OptionDef,
  PipelineOptionValues,
} from '../../../src/ingest/options/optionTable';
import { OptionSetting, longNameOf, optionKindOf, parseOptionValues } from '../../../src/ingest/options/optionParser';
import { nonNegativeInteger, parseByteSize } from '../../../src/ingest/options/optionText';
import { dbImportOptionsOf, parseReplaceRange } from '../../../src/ingest/options/importSettings';
import { KeySpec } from '../../../src/ingest/rows/keySpec';

const TABLE: readonly OptionDef[] = [...IMPORT_OPTIONS, ...CONFLICT_CHECK_OPTIONS, ...DB_POLICY_OPTIONS];

/** What commander makes of the same settings, as argv: its values, or its error's message. */
function viaCommander(settings: readonly OptionSetting[]): { values: Record<string, unknown> } | { error: string } {
  const cmd = addOptions(new Command('t').exitOverride().configureOutput({ writeOut: () => undefined, writeErr: () => undefined }), TABLE);
  const argv = settings.flatMap(({ name, value }) =>
    typeof value === 'string' ? [`--${name}`, value] : value ? [`--${name}`] : [`--no-${name}`],
  );
  try {
    cmd.parse(argv, { from: 'user' });
    return { values: cmd.opts() };
  } catch (err) {
    if (err instanceof CommanderError) return { error: err.message.replace(/^error: /, '') };
    return { error: (err as Error).message };
  }
}

function viaParser(settings: readonly OptionSetting[]): { values: Record<string, unknown> } | { error: string } {
  try {
    return { values: parseOptionValues<Record<string, unknown>>(TABLE, settings, 'options') };
  } catch (err) {
    return { error: (err as Error).message.replace(/^options: /, '') };
  }
}

describe('options as data', () => {
  it.each<[string, OptionSetting[]]>([
    ['no settings: every default', []],
    [
      'values, flags and negations',
      [
        { name: 'key', value: 'id:int64' },
        { name: 'header', value: true },
        { name: 'max-bad-rows', value: '12' },
        { name: 'create-if-missing', value: false },
        { name: 'verify-checksums', value: true },
        { name: 'on-conflict', value: 'skip' },
      ],
    ],
    ['an explicit --no-verify-checksums', [{ name: 'verify-checksums', value: false }]],
    [
      'a later setting replaces an earlier one',
      [
        { name: 'delimiter', value: ';' },
        { name: 'delimiter', value: '|' },
      ],
    ],
    ['a replace range', [{ name: 'replace-range', value: 'a..b' }]],
    ['a choice outside the table', [{ name: 'on-conflict', value: 'nope' }]],
    ['another one', [{ name: 'compression', value: 'bzip2' }]],
    ['a bad integer', [{ name: 'threads', value: '1e3' }]],
    ['a bad size stays text until the import reads it', [{ name: 'memory-limit', value: 'huge' }]],
  ])('reads %s as commander does', (_what, settings) => {
    const ours = viaParser(settings);
    expect(ours).toEqual(viaCommander(settings));
  });

  it('says which names are value options and which are flags, and refuses unknown ones', () => {
    expect(optionKindOf(TABLE, 'key')).toBe('value');
    expect(optionKindOf(TABLE, 'replace-range')).toBe('value');
    expect(optionKindOf(TABLE, 'header')).toBe('flag');
    expect(optionKindOf(TABLE, 'create-if-missing')).toBe('flag');
    expect(optionKindOf(TABLE, 'frobnicate')).toBeNull();
    expect(() => parseOptionValues(TABLE, [{ name: 'frobnicate', value: '1' }], 'import options')).toThrow(
      "import options: unknown option '--frobnicate'",
    );
    expect(() => parseOptionValues(TABLE, [{ name: 'header', value: 'yes' }], 'q')).toThrow(/is a flag/);
    expect(() => parseOptionValues(TABLE, [{ name: 'key', value: true }], 'q')).toThrow(/takes a value/);
    expect(longNameOf('--no-verify-checksums')).toEqual({ name: 'verify-checksums', negated: true });
    expect(longNameOf('--replace-range [from..to]')).toEqual({ name: 'replace-range', negated: false });
  });

  it('refuses a missing required option', () => {
    const defs: OptionDef[] = [{ flags: '--db <dir>', description: 'd', required: true }];
    expect(() => parseOptionValues(defs, [], 'x')).toThrow("x: required option '--db <dir>' not specified");
    expect(parseOptionValues<{ db: string }>(defs, [{ name: 'db', value: 'here' }], 'x').db).toBe('here');
  });

  it('takes decimal digits only for integers, and sizes with their units', () => {
    const n = nonNegativeInteger('--n');
    expect(n('0')).toBe(0);
    expect(n('4096')).toBe(4096);
    for (const bad of ['1e3', '-1', '1.5', ' 1', '', '0x10', '99999999999999999999'])
      expect(() => n(bad)).toThrow(`--n must be a non-negative integer, got "${bad}"`);
    expect(parseByteSize('256MiB', 'x')).toBe(256 << 20);
    expect(parseByteSize('1.5k', 'x')).toBe(1536);
    expect(parseByteSize('2GB', 'x')).toBe(2e9);
    expect(() => parseByteSize('lots', '--memory-limit')).toThrow(/--memory-limit must be a size/);
    expect(() => parseByteSize('9'.repeat(30), '--memory-limit')).toThrow(/too large/);
  });

  it('builds the library options from the values, replace-range bounds typed by the key spec', () => {
    const values = parseOptionValues<PipelineOptionValues>(
      TABLE,
      [
        { name: 'key', value: 'id:int64' },
        { name: 'replace-range', value: '10..20' },
        { name: 'memory-limit', value: '64MiB' },
      ],
      'q',
    );
    const options = dbImportOptionsOf(['a.csv'], { ...values, db: '/db' }, 'import');
    expect(options.import.memoryLimitBytes).toBe(64 << 20);
    expect(options.import.key.format(options.import.key.encodeText('7'))).toBe('7');
    const spec = KeySpec.parse('id:int64');
    expect(options.replaceRange).toEqual({ start: spec.encodeText('10'), end: spec.encodeText('20') });
    expect(parseReplaceRange(true, spec)).toEqual({});
    expect(parseReplaceRange('..20', spec)).toEqual({ start: undefined, end: spec.encodeText('20') });
    expect(() => parseReplaceRange('10', spec)).toThrow(/must be FROM..TO/);
    expect(() => parseReplaceRange('ten..', spec)).toThrow(/--replace-range FROM "ten"/);
    const check = dbImportOptionsOf(['a.csv'], { ...values, db: '/db' }, 'check');
    expect('onConflict' in check).toBe(false);
  });
});
