/**
 * `ingest sst write | dump | verify`: the table format as a standalone tool.
 *
 * - write: a CSV becomes one SST. Key = the first column's bytes, value = the other columns joined
 *   by the delimiter. Rows are sorted in memory (this command is for small files and tests; the
 *   bounded-memory path is `ingest import`). A repeated key is an error naming both lines.
 * - dump: properties, entries and range tombstones; `--json` prints one object
 *   {file, properties, entries: [{keyHex, seq, type, valueHex}], rangeTombstones: [{startHex, endHex, seq}]}.
 * - verify: every block checksum, key order, and properties against contents; exit 0, or the
 *   first problem on stderr and exit 1 (corruption) / 2 (not an SST we can read as asked).
 */
import * as fs from 'fs';
import { Command, Option } from 'commander';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { parseCompression, WRITABLE_COMPRESSION_NAMES } from '../../src/sstable/compression';
import { parseChecksumType } from '../../src/sstable/checksum';
import { IngestError } from '../../src/util/errors';
import { onFirstUse } from '../../src/util/onFirstUse';
import { sequenceOf, typeOf, userKeyOf, formatKey } from '../../src/base/internalKey';
import { valueTypeName } from '../../src/base/valueTypeName';

function intOption(name: string, min: number, max: number): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new IngestError('USAGE', `${name} must be an integer in [${min}, ${max}], got "${v}"`);
    return n;
  };
}

function numberOption(name: string, min: number, max: number): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new IngestError('USAGE', `${name} must be a number in [${min}, ${max}], got "${v}"`);
    return n;
  };
}

interface WriteOptions {
  output: string;
  delimiter: string;
  header?: boolean;
  compression: string;
  bloomBits: number;
  formatVersion: number;
  checksum: string;
  json?: boolean;
}

/** csv-parse's synchronous parser, for `sst write` alone. */
const csvParseSync = onFirstUse(() => require('csv-parse/sync') as typeof import('csv-parse/sync'));

function sstWrite(csvPath: string, opts: WriteOptions): void {
  if (opts.delimiter.length !== 1) throw new IngestError('USAGE', `--delimiter must be one character, got "${opts.delimiter}"`);
  let text: Buffer;
  try {
    text = fs.readFileSync(csvPath);
  } catch (e) {
    throw new IngestError('BAD_INPUT', `cannot read ${csvPath}: ${(e as Error).message}`);
  }
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = csvParseSync().parse(text, {
      delimiter: opts.delimiter,
      bom: true,
      relax_column_count: true,
      info: true,
      skip_empty_lines: true,
    }) as unknown as typeof records;
  } catch (e) {
    throw new IngestError('BAD_INPUT', `${csvPath}: ${(e as Error).message}`);
  }
  if (opts.header) records = records.slice(1);
  const rows = records.map((r) => ({
    key: Buffer.from(r.record[0] ?? '', 'utf8'),
    value: Buffer.from(r.record.slice(1).join(opts.delimiter), 'utf8'),
    line: r.info.lines,
  }));
  rows.sort((a, b) => Buffer.compare(a.key, b.key) || a.line - b.line);
  for (let i = 1; i < rows.length; i++) {
    if (rows[i].key.equals(rows[i - 1].key)) {
      throw new IngestError(
        'DUPLICATE_KEY',
        `${csvPath}: duplicate key ${formatKey(rows[i].key)} on lines ${rows[i - 1].line} and ${rows[i].line}`,
      );
    }
  }
  const writer = new SstFileWriter(opts.output, {
    compression: parseCompressionOrUsage(opts.compression),
    bloomBitsPerKey: opts.bloomBits,
    formatVersion: opts.formatVersion,
    checksumType: parseChecksumOrUsage(opts.checksum),
  });
  try {
    for (const r of rows) writer.put(r.key, r.value);
  } catch (e) {
    writer.abort();
    throw e;
  }
  const meta = writer.finish();
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify({
        file: meta.path,
        sizeBytes: meta.fileSizeBytes,
        entries: meta.numEntries,
        dataBlocks: meta.numDataBlocks,
        smallestHex: userKeyOf(meta.smallestKey).toString('hex'),
        largestHex: userKeyOf(meta.largestKey).toString('hex'),
      })}\n`,
    );
  } else {
    process.stdout.write(
      `wrote ${meta.path}: ${meta.numEntries} entries, ${meta.numDataBlocks} data blocks, ${meta.fileSizeBytes} bytes\n`,
    );
  }
}

function parseCompressionOrUsage(name: string) {
  try {
    return parseCompression(name);
  } catch (e) {
    throw new IngestError('USAGE', (e as Error).message);
  }
}

function parseChecksumOrUsage(name: string) {
  try {
    return parseChecksumType(name);
  } catch (e) {
    throw new IngestError('USAGE', (e as Error).message);
  }
}

function printable(b: Buffer): string {
  for (const c of b) if (c < 0x20 || c > 0x7e) return `0x${b.toString('hex')}`;
  return b.toString('latin1');
}

function sstDump(file: string, opts: { json?: boolean }): void {
  const reader = TableReader.open(file);
  try {
    const it = reader.newIterator();
    const out = process.stdout;
    if (opts.json) {
      const entries: { keyHex: string; seq: number; type: string; valueHex: string }[] = [];
      for (it.first(); it.valid(); it.next()) {
        const k = it.key();
        entries.push({
          keyHex: userKeyOf(k).toString('hex'),
          seq: sequenceOf(k),
          type: valueTypeName(typeOf(k)),
          valueHex: it.value().toString('hex'),
        });
      }
      it.close();
      const rangeTombstones = reader
        .rangeTombstones()
        .map((t) => ({ startHex: t.start.toString('hex'), endHex: t.end.toString('hex'), seq: t.seq }));
      // `raw` (the undecoded name → bytes map) is left out: every property it holds is decoded above.
      const { raw: _raw, ...properties } = reader.properties;
      out.write(`${JSON.stringify({ file, properties, entries, rangeTombstones })}\n`);
      return;
    }
    out.write(`file: ${file}\nformat_version: ${reader.footer.formatVersion}\nproperties:\n`);
    for (const [name, value] of Object.entries(reader.properties)) {
      if (name === 'raw') continue;
      out.write(`  ${name}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}\n`);
    }
    out.write('entries:\n');
    for (it.first(); it.valid(); it.next()) {
      const k = it.key();
      out.write(`  ${printable(userKeyOf(k))} @ ${sequenceOf(k)} : ${valueTypeName(typeOf(k))} => ${printable(it.value())}\n`);
    }
    it.close();
    const tombstones = reader.rangeTombstones();
    if (tombstones.length > 0) {
      out.write('range tombstones:\n');
      for (const t of tombstones) out.write(`  [${printable(t.start)}, ${printable(t.end)}) @ ${t.seq}\n`);
    }
  } finally {
    reader.close();
  }
}

function sstVerify(file: string, opts: { json?: boolean }): void {
  const reader = TableReader.open(file, { verifyChecksums: true });
  try {
    reader.verify();
  } finally {
    reader.close();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify({ file, ok: true })}\n`);
  else process.stdout.write(`${file}: OK\n`);
}

export function registerSstCommands(program: Command): void {
  const sst = program.command('sst').description('write, dump and verify single SST files (RocksDB BlockBasedTable format)');
  sst
    .command('write')
    .description('write a CSV as one SST: key = first column, value = the other columns joined by the delimiter')
    .argument('<csv>', 'input CSV file')
    .requiredOption('-o, --output <file.sst>', 'output SST path')
    .option('--delimiter <c>', 'field delimiter', ',')
    .option('--header', 'skip the first row (column names)')
    .addOption(new Option('--compression <type>', 'block compression').choices(WRITABLE_COMPRESSION_NAMES).default('lz4'))
    .option('--bloom-bits <n>', 'Bloom filter bits per key (0: no filter)', numberOption('--bloom-bits', 0, 100), 10)
    .option('--format-version <n>', 'table format_version (2, 3, 4 or 5)', intOption('--format-version', 2, 5), 5)
    .addOption(new Option('--checksum <type>', 'block checksum').choices(['xxh3', 'crc32c', 'xxhash', 'xxhash64', 'none']).default('xxh3'))
    .option('--json', 'print a JSON summary')
    .action((csv: string, opts: WriteOptions) => sstWrite(csv, opts));
  sst
    .command('dump')
    .description('print properties, entries and range tombstones')
    .argument('<file>', 'SST file')
    .option('--json', 'one JSON object: {file, properties, entries, rangeTombstones}')
    .action((file: string, opts: { json?: boolean }) => sstDump(file, opts));
  sst
    .command('verify')
    .description('check every block checksum, key order and the properties against the contents')
    .argument('<file>', 'SST file')
    .option('--json', 'print {"file", "ok": true} on success')
    .action((file: string, opts: { json?: boolean }) => sstVerify(file, opts));
}
