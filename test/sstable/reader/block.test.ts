/**
 * The generic block and its iterator (src/sstable/reader/block.ts) on hand-built blocks:
 * forward, backward and seeks against a sorted model at several restart intervals,
 * trySeekUsingNext (same positions, fewer comparisons), key-comparison bounds of searches, global
 * seqno presentation, delta-encoded index handles, the data-block hash index footer, and
 * malformed or randomly damaged blocks (CorruptionError only, never a loop).
 *
 * Expected results come from sorted arrays searched linearly (support.ts).
 */
import { Block, BlockIterator, BlockValueFormat } from '../../../src/sstable/reader/block';
import { compareByteRanges, compareInternal, compareInternalKeyRanges } from '../../../src/base/keyCompare';
import { perf, resetPerfContext } from '../../../src/base/perfContext';
import { BlockBuilder } from '../../../src/sstwriter/blockBuilder';
import { BLOCK_TRAILER_BYTES } from '../../../src/sstable/checksum';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, typeOf, userKeyOf, ValueType } from '../../../src/base/internalKey';
import { ByteSink, zigzagEncode } from '../../../src/util/coding';
import { CorruptionError } from '../../../src/util/errors';
import { Entry, expectAt, expectCorruption, lowerBoundIndex, prng, randomEntries, randomTarget } from './support';

function buildBlock(entries: Entry[], restartInterval: number): Buffer {
  const builder = new BlockBuilder({ restartInterval });
  for (const e of entries) builder.add(e.key, e.value);
  return Buffer.from(builder.finish());
}

function dataIterator(contents: Buffer, globalSeqno = -1): BlockIterator {
  return new BlockIterator(Block.parse(contents, 'test.sst', 0), { order: compareInternalKeyRanges, internalKeys: true, globalSeqno });
}

describe('Block and BlockIterator', () => {
  test.each([1, 3, 16])('forward, backward and seeks match a sorted model (restart interval %i)', (restartInterval) => {
    const rand = prng(restartInterval);
    const entries = randomEntries(rand, 300);
    const it = dataIterator(buildBlock(entries, restartInterval));
    const forward: string[] = [];
    for (it.first(); it.valid(); it.next()) forward.push(it.key().toString('hex') + ':' + it.value().toString('hex'));
    expect(forward).toEqual(entries.map((e) => e.key.toString('hex') + ':' + e.value.toString('hex')));
    const backward: string[] = [];
    for (it.last(); it.valid(); it.prev()) backward.push(it.key().toString('hex') + ':' + it.value().toString('hex'));
    expect(backward).toEqual(forward.slice().reverse());
    for (let i = 0; i < 400; i++) {
      const target = randomTarget(rand, entries);
      const ge = lowerBoundIndex(entries, target);
      it.seekGE(target);
      expectAt(it, entries, ge);
      it.seekLT(target);
      expectAt(it, entries, ge - 1);
    }
  });

  test('random next/prev walks agree with the model, across restart intervals', () => {
    const rand = prng(7);
    const entries = randomEntries(rand, 200);
    const it = dataIterator(buildBlock(entries, 4));
    for (let walk = 0; walk < 30; walk++) {
      let pos = Math.floor(rand() * entries.length);
      it.seekGE(entries[pos].key);
      for (let step = 0; step < 60 && pos >= 0 && pos < entries.length; step++) {
        if (rand() < 0.5) {
          it.next();
          pos++;
        } else {
          it.prev();
          pos--;
        }
        expectAt(it, entries, pos);
      }
    }
  });

  test('trySeekUsingNext gives the same positions as full seeks, with fewer comparisons on close targets', () => {
    const rand = prng(11);
    const entries = randomEntries(rand, 400);
    const contents = buildBlock(entries, 16);
    const targets: Buffer[] = [];
    for (let i = 0; i < entries.length; i += 1 + Math.floor(rand() * 3)) targets.push(entries[i].key);
    const plain = dataIterator(contents);
    const stepping = dataIterator(contents);
    resetPerfContext();
    for (const t of targets) plain.seekGE(t);
    const plainComparisons = perf.keyComparisons;
    resetPerfContext();
    for (const t of targets) {
      stepping.seekGE(t, { trySeekUsingNext: true });
      plain.seekGE(t);
      expect(stepping.key().equals(plain.key())).toBe(true);
    }
    const steppingComparisons = perf.keyComparisons - plainComparisons; // subtract the plain seeks made in the loop
    expect(steppingComparisons).toBeLessThan(plainComparisons / 2);
    // Far jumps fall back to a binary search and still land right.
    const far = dataIterator(contents);
    far.seekGE(entries[0].key);
    far.seekGE(entries[entries.length - 3].key, { trySeekUsingNext: true });
    expectAt(far, entries, entries.length - 3);
    far.seekGE(makeInternalKey(Buffer.from('zzzzzzzzzzzzzz'), 0, ValueType.Seek), { trySeekUsingNext: true });
    expect(far.valid()).toBe(false);
  });

  test('trySeekUsingNext searches forward from wherever next() left it, near or far, at any restart interval', () => {
    const rand = prng(12);
    const all = randomEntries(rand, 300);
    // With a global seqno every version of a key would present the same sequence: one per key.
    const onePerKey = all.filter(
      (e, i) =>
        i === 0 ||
        compareByteRanges(userKeyOf(all[i - 1].key), 0, userKeyOf(all[i - 1].key).length, userKeyOf(e.key), 0, userKeyOf(e.key).length) !==
          0,
    );
    for (const [entries, globalSeqno] of [
      [all, -1],
      [onePerKey, 7],
    ] as Array<[Entry[], number]>) {
      // The keys as presented (the global seqno in their trailers): the model to search.
      const presented = entries.map((e) => ({
        key: globalSeqno < 0 ? e.key : makeInternalKey(userKeyOf(e.key), globalSeqno, typeOf(e.key)),
        value: e.value,
      }));
      for (const interval of [1, 3, 16]) {
        const contents = buildBlock(entries, interval);
        for (let walk = 0; walk < 20; walk++) {
          const it = dataIterator(contents, globalSeqno);
          it.first();
          let pos = 0;
          while (pos < presented.length) {
            const steps = rand() < 0.5 ? Math.floor(rand() * 3) : 0;
            for (let s = 0; s < steps && pos < presented.length; s++, pos++) it.next();
            if (pos >= presented.length) break;
            // A target at or past the current key: the current key itself, an entry a few or many
            // entries ahead, a key between entries, or past the end of the block.
            const r = rand();
            const ahead = Math.min(presented.length - 1, pos + (rand() < 0.7 ? Math.floor(rand() * 6) : Math.floor(rand() * 150)));
            let target = presented[ahead].key;
            if (r < 0.3) target = makeInternalKey(userKeyOf(target), rand() < 0.5 ? 0 : MAX_SEQUENCE_NUMBER, ValueType.Seek);
            else if (r < 0.35) target = makeInternalKey(Buffer.from('zzzzzzzzzzzzzz'), 0, ValueType.Seek);
            if (compareInternal(target, presented[pos].key) < 0) target = presented[pos].key;
            it.seekGE(target, { trySeekUsingNext: true });
            pos = lowerBoundIndex(presented, target);
            expectAt(it, presented, pos);
          }
        }
      }
    }
  });

  test.each([
    [14, 'within one restart interval of 16'],
    [40, 'across three restart intervals: once more per restart entry, which stores the whole key, and no restart search'],
  ])("a seek past a key's %i versions compares that user key once per restart interval, not once per version (%s)", (versions) => {
    const entries: Entry[] = [];
    for (let v = versions; v >= 1; v--)
      entries.push({ key: makeInternalKey(Buffer.from('key-a'), v, ValueType.Value), value: Buffer.alloc(130, 0x61) });
    entries.push({ key: makeInternalKey(Buffer.from('key-b'), 1, ValueType.Value), value: Buffer.from('b') });
    const contents = buildBlock(entries, 16);
    const target = makeInternalKey(Buffer.from('key-b'), MAX_SEQUENCE_NUMBER, ValueType.Seek);
    const stepping = dataIterator(contents);
    stepping.first();
    resetPerfContext();
    stepping.seekGE(target, { trySeekUsingNext: true });
    expectAt(stepping, entries, versions);
    // "key-a" once, again at each later restart entry of its versions (they start at entries 16,
    // 32, ...), and "key-b" once.
    expect(perf.keyComparisons).toBeLessThanOrEqual(2 + Math.floor((versions - 1) / 16));
    const full = dataIterator(contents);
    resetPerfContext();
    full.seekGE(target);
    expectAt(full, entries, versions);
    // The restarts' binary search, then "key-a" once more and "key-b".
    expect(perf.keyComparisons).toBeLessThanOrEqual(Math.ceil(Math.log2(Math.ceil((versions + 1) / 16))) + 3);
  });

  test('a search does not compare again the restart it already found above the target', () => {
    // Restart interval 1, as in index blocks: every entry is a restart point.
    const keys: Entry[] = [];
    for (let k = 0; k < 64; k++)
      keys.push({
        key: makeInternalKey(Buffer.from(`key-${String(k * 2).padStart(3, '0')}`), 1, ValueType.Value),
        value: Buffer.from('v'),
      });
    const contents = buildBlock(keys, 1);
    const between = (k: number): Buffer => makeInternalKey(Buffer.from(`key-${String(k * 2 + 1).padStart(3, '0')}`), 1, ValueType.Value);
    // Full seeks: a binary search over 64 restarts probes at most ceil(log2(65)) = 7 of them,
    // and lands on the one above the target without an eighth comparison.
    let most = 0;
    for (let k = 0; k < 63; k++) {
      const it = dataIterator(contents);
      resetPerfContext();
      it.seekGE(between(k));
      expectAt(it, keys, k + 1);
      most = Math.max(most, perf.keyComparisons);
    }
    expect(most).toBeLessThanOrEqual(7);
    // trySeekUsingNext without steps (index blocks): the current key, then the gallop's first
    // probe, which is the answer.
    const index = new BlockIterator(Block.parse(contents, 'test.sst', 0), {
      order: compareInternalKeyRanges,
      internalKeys: true,
      trySeekSteps: 0,
    });
    index.first();
    for (let k = 0; k < 63; k++) {
      resetPerfContext();
      index.seekGE(between(k), { trySeekUsingNext: true });
      expectAt(index, keys, k + 1);
      expect(perf.keyComparisons).toBe(2);
    }
  });

  test("seeks past a key's versions rebuild a next key that shares bytes of the last version's trailer", () => {
    // "ab" at seqs 300, 200, 100, then user key "ab" 01 64 07, which shares "ab" 01 64 with the
    // internal key ("ab", 100, Put) before it: the scan must keep that version's trailer bytes
    // even though it steps over the versions without comparing them.
    const a = Buffer.from('ab');
    const b = Buffer.concat([a, Buffer.from([ValueType.Value, 100, 7])]);
    const entries: Entry[] = [300, 200, 100].map((seq) => ({
      key: makeInternalKey(a, seq, ValueType.Value),
      value: Buffer.from(`v${seq}`),
    }));
    entries.push(
      { key: makeInternalKey(b, 50, ValueType.Value), value: Buffer.from('b') },
      { key: makeInternalKey(Buffer.from('zz'), 1, ValueType.Value), value: Buffer.from('z') },
    );
    const contents = buildBlock(entries, 16);
    const target = makeInternalKey(b, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    const full = dataIterator(contents);
    full.seekGE(target);
    expectAt(full, entries, 3);
    const stepping = dataIterator(contents);
    stepping.first();
    stepping.seekGE(target, { trySeekUsingNext: true });
    expectAt(stepping, entries, 3);
    stepping.next();
    expectAt(stepping, entries, 4);
  });

  test('global seqno is presented on every key, even when a shared prefix reaches into the previous trailer', () => {
    // ("a", 0, Put) = 61 | 01 00 00 00 00 00 00 00, then user key 61 01 00 00 shares 4 bytes with
    // it, two of which are sequence bytes that the presented key overwrites.
    const entries: Entry[] = [
      { key: makeInternalKey(Buffer.from('61', 'hex'), 0, ValueType.Value), value: Buffer.from('x') },
      { key: makeInternalKey(Buffer.from('61010000', 'hex'), 0, ValueType.Merge), value: Buffer.from('y') },
      { key: makeInternalKey(Buffer.from('6101000000', 'hex'), 0, ValueType.Deletion), value: Buffer.alloc(0) },
    ];
    const it = dataIterator(buildBlock(entries, 16), 0x123456789);
    const seen: string[] = [];
    for (it.first(); it.valid(); it.next()) seen.push(`${userKeyOf(it.key()).toString('hex')}@${sequenceOf(it.key())}/${typeOf(it.key())}`);
    expect(seen).toEqual(['61@4886718345/1', '61010000@4886718345/2', '6101000000@4886718345/0']);
    const back: string[] = [];
    for (it.last(); it.valid(); it.prev()) back.push(`${userKeyOf(it.key()).toString('hex')}@${sequenceOf(it.key())}`);
    expect(back).toEqual(['6101000000@4886718345', '61010000@4886718345', '61@4886718345']);
    // Seeks compare against the presented keys: (61010000, seq 5) sorts after (61010000, seq 0x123456789).
    it.seekGE(makeInternalKey(Buffer.from('61010000', 'hex'), 5, ValueType.Seek));
    expect(userKeyOf(it.key()).toString('hex')).toBe('6101000000');
  });

  test('delta-encoded index values decode to contiguous handles in every direction', () => {
    const rand = prng(3);
    const builder = new BlockBuilder({ restartInterval: 4, valueDeltaEncoding: true });
    const handles: { offset: number; size: number }[] = [];
    const keys: Buffer[] = [];
    let offset = 0;
    let previousSize = 0;
    for (let i = 0; i < 50; i++) {
      const size = 50 + Math.floor(rand() * 5000);
      const key = Buffer.from(`key${String(i).padStart(4, '0')}`);
      const full = new ByteSink(20);
      full.putVarint64(offset);
      full.putVarint64(size);
      const delta = new ByteSink(10);
      delta.putVarint64(zigzagEncode(size - previousSize));
      builder.add(key, full.view(), delta.view());
      handles.push({ offset, size });
      keys.push(key);
      offset += size + BLOCK_TRAILER_BYTES;
      previousSize = size;
    }
    const block = Block.parse(Buffer.from(builder.finish()), 'index.sst', 0);
    const it = new BlockIterator(block, { order: compareByteRanges, valueFormat: BlockValueFormat.DeltaHandle });
    let i = 0;
    for (it.first(); it.valid(); it.next(), i++) expect({ offset: it.handleOffset, size: it.handleSize }).toEqual(handles[i]);
    expect(i).toBe(50);
    for (it.last(), i = 49; it.valid(); it.prev(), i--) expect({ offset: it.handleOffset, size: it.handleSize }).toEqual(handles[i]);
    expect(i).toBe(-1);
    for (const j of [0, 1, 2, 3, 4, 5, 22, 23, 49]) {
      it.seekGE(keys[j]);
      expect({ offset: it.handleOffset, size: it.handleSize }).toEqual(handles[j]);
      it.seekLT(keys[j]);
      if (j === 0) expect(it.valid()).toBe(false);
      else expect({ offset: it.handleOffset, size: it.handleSize }).toEqual(handles[j - 1]);
    }
  });

  test('steps over a data-block hash index flagged in the footer word', () => {
    const entries = randomEntries(prng(5), 40);
    const plain = buildBlock(entries, 16);
    const numRestarts = plain.readUInt32LE(plain.length - 4);
    const restartArray = plain.subarray(plain.length - 4 - 4 * numRestarts, plain.length - 4);
    const buckets = Buffer.from([0, 255, 254, 1, 0]);
    const footer = Buffer.alloc(6);
    footer.writeUInt16LE(buckets.length, 0);
    footer.writeUInt32LE((numRestarts | 0x80000000) >>> 0, 2);
    const withHash = Buffer.concat([plain.subarray(0, plain.length - 4 - 4 * numRestarts), restartArray, buckets, footer]);
    const it = dataIterator(withHash);
    let i = 0;
    for (it.first(); it.valid(); it.next(), i++) expectAt(it, entries, i);
    expect(i).toBe(entries.length);
    it.seekGE(entries[17].key);
    expectAt(it, entries, 17);
  });

  test('an empty block (one restart at 0) iterates as empty', () => {
    const it = dataIterator(buildBlock([], 16));
    it.first();
    expect(it.valid()).toBe(false);
    it.seekGE(makeInternalKey(Buffer.from('a'), 0, ValueType.Seek));
    expect(it.valid()).toBe(false);
    it.last();
    expect(it.valid()).toBe(false);
  });

  test('malformed layouts are CorruptionErrors naming the file and block', () => {
    const good = buildBlock(randomEntries(prng(9), 20), 4);
    const withWord = (word: number): Buffer => {
      const b = Buffer.from(good);
      b.writeUInt32LE(word >>> 0, b.length - 4);
      return b;
    };
    expect(expectCorruption(() => Block.parse(Buffer.from([1, 0]), 'f.sst', 77)).message).toMatch(/f\.sst at offset 77/);
    expectCorruption(() => Block.parse(withWord(100000), 'f.sst', 0)); // restarts do not fit
    expectCorruption(() => Block.parse(withWord(0x7fffffff), 'f.sst', 0));
    const badRestart = Buffer.from(good);
    const restarts = good.readUInt32LE(good.length - 4);
    badRestart.writeUInt32LE(good.length, good.length - 4 - 4 * restarts + 4); // restart 1 past the entries
    expectCorruption(() => Block.parse(badRestart, 'f.sst', 0));
    const firstNotZero = Buffer.from(good);
    firstNotZero.writeUInt32LE(3, good.length - 4 - 4 * restarts);
    expectCorruption(() => Block.parse(firstNotZero, 'f.sst', 0));
    // A restart entry that claims to share bytes with a previous key.
    const sharedAtRestart = Buffer.from(good);
    sharedAtRestart[good.readUInt32LE(good.length - 4 - 4 * restarts + 4)] = 3;
    expectCorruption(() => {
      const it = dataIterator(sharedAtRestart);
      for (it.last(); it.valid(); it.prev()); // stepping back re-scans from every restart point
    });
    const sharedAtFirst = Buffer.from(good);
    sharedAtFirst[0] = 3;
    expectCorruption(() => dataIterator(sharedAtFirst).first());
    // A key length running past the entries.
    const longKey = Buffer.from(good);
    longKey[1] = 0xff; // non_shared becomes the two-byte varint ff 7f = 16383
    longKey[2] = 0x7f;
    expectCorruption(() => dataIterator(longKey).first());
  });

  test('random byte damage never escapes as anything but CorruptionError, and never loops', () => {
    const rand = prng(13);
    const entries = randomEntries(rand, 60);
    const good = buildBlock(entries, 4);
    let corruptions = 0;
    for (let trial = 0; trial < 1500; trial++) {
      const bad = Buffer.from(good);
      const flips = 1 + Math.floor(rand() * 3);
      for (let f = 0; f < flips; f++) bad[Math.floor(rand() * bad.length)] ^= 1 << Math.floor(rand() * 8);
      try {
        const it = dataIterator(bad);
        // Each entry takes at least 2 bytes, so more steps than bytes would mean a loop.
        let steps = 0;
        for (it.first(); it.valid(); it.next()) if (++steps > bad.length) throw new Error('forward iteration does not end');
        steps = 0;
        for (it.last(); it.valid(); it.prev()) if (++steps > bad.length) throw new Error('backward iteration does not end');
        for (let s = 0; s < 5; s++) {
          const t = randomTarget(rand, entries);
          it.seekGE(t);
          it.seekLT(t);
        }
      } catch (e) {
        if (!(e instanceof CorruptionError)) throw e;
        corruptions++;
      }
    }
    expect(corruptions).toBeGreaterThan(100); // the damage is mostly detected structurally
  });
});
