/**
 * Whole-file verification (TableReader.verify(), src/sstable/reader/verify.ts) beyond what the
 * reader tests already run on every fixture and written file: properties that disagree with the
 * contents are reported although reading still works.
 */
import { TableReader } from '../../../src/sstable/reader/tableReader';
import { Prop } from '../../../src/sstable/format';
import { ByteSink } from '../../../src/util/coding';
import { expectCorruption, loadFixture, rewriteProperties, scan, useTmpDir } from './support';

const tmpDir = useTmpDir('table-verify-test-');

describe('TableReader.verify', () => {
  test('verify() reports properties that disagree with the contents', () => {
    const file = rewriteProperties(tmpDir(), 'fv3_xxhash_none_bloom.sst', 'wrong-count.sst', (map) => {
      const s = new ByteSink(10);
      s.putVarint64(999);
      map.set(Prop.NumEntries, Buffer.from(s.view()));
    });
    const reader = TableReader.open(file);
    expect(scan(reader).length).toBe(loadFixture('fv3_xxhash_none_bloom.json').entries.length); // reading still works
    expect(expectCorruption(() => reader.verify()).message).toMatch(/rocksdb\.num\.entries is 999/);
    reader.close();
  });
});
