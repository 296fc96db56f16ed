/**
 * Option values (optionTable.ts) → the library's import options: what every front end of the
 * pipeline (the CLI's `import`, `plan`, `check`; the server's POST /v1/imports and SST uploads)
 * builds before it runs anything. Sizes, the compression name and the key spec are parsed here,
 * once per run; bad text is IngestError('USAGE') (exit code 2, HTTP 400), a replace-range bound
 * the key spec cannot encode IngestError('BAD_INPUT') naming the bound.
 */
import { IngestError } from '../../util/errors';
import { parseCompression } from '../../sstable/compression';
import { ImportOptions } from '../importTypes';
import { KeySpec } from '../rows/keySpec';
import { DbImportMode, DbImportOptions, ReplaceRangeRequest } from '../importIntoDb';
import { ImportOptionValues, PipelineOptionValues } from './optionTable';
import { parseByteSize } from './optionText';
import { checkReportOptions } from '../../conflict/reportStream';

/** The import options every pipeline run builds, less where the SSTs go; the key spec parsed. */
export type ImportSettings = Omit<ImportOptions, 'outputDir' | 'writeSummaryFile' | 'writeRowOrigins'> & { key: KeySpec };

export function importSettingsOf(inputs: string[], o: ImportOptionValues): ImportSettings {
  return {
    inputs,
    tmpDir: o.tmpDir,
    dialect: { delimiter: o.delimiter, quote: o.quote, escape: o.escape, comment: o.comment ?? '', skipLines: o.skipLines },
    header: o.header === true,
    columns: o.columns !== undefined ? o.columns.split(',') : null,
    value: o.value,
    valueFormat: o.valueFormat,
    memoryLimitBytes: parseByteSize(o.memoryLimit, '--memory-limit'),
    targetFileSizeBytes: parseByteSize(o.targetFileSize, '--target-file-size'),
    onDuplicate: o.onDuplicate,
    maxBadRows: o.maxBadRows,
    rejectsPath: o.rejects,
    parser: o.parser,
    parseThreads: o.threads,
    mergeThreads: o.mergeThreads,
    sstOptions: {
      compression: parseCompression(o.compression),
      bloomBitsPerKey: o.bloomBits,
      blockSizeBytes: parseByteSize(o.blockSize, '--block-size'),
    },
    key: KeySpec.parse(o.key),
  };
}

/** One bound of --replace-range, typed as the import's key spec reads keys. */
function replaceRangeBound(keySpec: KeySpec, text: string, what: string): Buffer {
  try {
    return keySpec.encodeText(text);
  } catch (err) {
    if (err instanceof IngestError) throw new IngestError('BAD_INPUT', `${what} "${text}": ${err.message}`);
    throw err;
  }
}

/** "FROM..TO", "FROM..", "..TO" (split at the first ".."), or a bare flag: the import's span. */
export function parseReplaceRange(text: string | true | undefined, keySpec: KeySpec): ReplaceRangeRequest | undefined {
  if (text === undefined) return undefined;
  if (text === true) return {};
  const at = text.indexOf('..');
  if (at < 0) throw new IngestError('USAGE', `--replace-range must be FROM..TO (either side may be empty), got "${text}"`);
  const from = text.slice(0, at);
  const to = text.slice(at + 2);
  return {
    start: from === '' ? undefined : replaceRangeBound(keySpec, from, '--replace-range FROM'),
    end: to === '' ? undefined : replaceRangeBound(keySpec, to, '--replace-range TO'),
  };
}

/** DbImport options whose import's key spec is parsed (front ends show keys with it). */
export type DbImportSettings = DbImportOptions & { import: ImportSettings };

/** The DbImport options of a pipeline run's option values (mode check: no policy options). */
export function dbImportOptionsOf(inputs: string[], o: PipelineOptionValues, mode: DbImportMode): DbImportSettings {
  const importSettings = importSettingsOf(inputs, o);
  const common = {
    mode,
    dbDir: o.db,
    import: importSettings,
    conflictStrategy: o.conflictStrategy,
    maxReported: o.maxReported,
    reportPath: o.report,
    reportFormat: o.reportFormat,
  };
  checkReportOptions(o.report, o.reportFormat, o.maxReported);
  if (mode === 'check') return { ...common, outputDir: o.outputDir };
  return {
    ...common,
    createIfMissing: o.createIfMissing,
    onConflict: o.onConflict,
    replaceRange: parseReplaceRange(o.replaceRange, importSettings.key),
    verifyChecksums: o.verifyChecksums,
    allowBlockingFlush: o.blockingFlush,
  };
}
