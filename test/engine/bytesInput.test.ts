/**
 * Strings and Uint8Arrays at the engine's public surface (src/engine/bytesInput.ts): put, get,
 * delete, deleteRange, write batches, iterator bounds and seeks take a string (its UTF-8 bytes),
 * a Buffer or a plain Uint8Array, and all three name the same key; what comes back is a Buffer.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { WriteBatch } from '../../src/engine/writeBatch';
import { toBytes } from '../../src/engine/bytesInput';

let dir: string;
let engine: Engine;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bytes-input-'));
  engine = await Engine.open(dir);
});
afterEach(async () => {
  await engine.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const text = (v: Buffer | null): string | null => (v === null ? null : v.toString('utf8'));

function keysOf(e: Engine, opts: Parameters<Engine['newIterator']>[0] = {}): string[] {
  const it = e.newIterator(opts);
  const out: string[] = [];
  for (it.first(); it.valid(); it.next()) out.push(`${it.key().toString()}=${it.value().toString()}`);
  it.close();
  return out;
}

test('toBytes: a Buffer is itself, a Uint8Array a view without a copy, a string its UTF-8 bytes', () => {
  const buffer = Buffer.from('abc');
  expect(toBytes(buffer)).toBe(buffer);
  const backing = new Uint8Array([0, 1, 2, 3, 4]);
  const view = toBytes(backing.subarray(1, 4));
  expect([...view]).toEqual([1, 2, 3]);
  backing[2] = 9;
  expect(view[1]).toBe(9);
  expect(toBytes('é€')).toEqual(Buffer.from([0xc3, 0xa9, 0xe2, 0x82, 0xac]));
});

test('put and get with strings; the value comes back as a Buffer; string, Buffer and Uint8Array name one key', async () => {
  await engine.put('hello', 'world');
  const v = engine.get('hello');
  expect(Buffer.isBuffer(v)).toBe(true);
  expect(text(v)).toBe('world');
  expect(text(engine.get(Buffer.from('hello')))).toBe('world');
  expect(text(engine.get(new TextEncoder().encode('hello')))).toBe('world');
  await engine.put(new Uint8Array([0x6b, 0xc3, 0xa9]), new Uint8Array([0x76]));
  expect(text(engine.get('ké'))).toBe('v');
});

test('delete and deleteRange with strings', async () => {
  for (const k of ['a', 'b', 'c', 'd']) await engine.put(k, `v-${k}`);
  await engine.delete('a');
  await engine.deleteRange('b', 'd');
  expect(engine.get('a')).toBeNull();
  expect(engine.get('b')).toBeNull();
  expect(engine.get('c')).toBeNull();
  expect(text(engine.get('d'))).toBe('v-d');
});

test('write batches with strings, iterator bounds and seeks with strings', async () => {
  const batch = new WriteBatch().put('k1', 'one').put('k2', 'two').put('k3', 'three').put('x', 'gone').delete('x');
  batch.deleteRange('k3', 'k4');
  await engine.write(batch);
  expect(keysOf(engine)).toEqual(['k1=one', 'k2=two']);
  await engine.put('k3', 'again');
  expect(keysOf(engine, { lowerBound: 'k2', upperBound: 'k3' })).toEqual(['k2=two']);
  const it = engine.newIterator();
  it.seekGE('k2');
  expect(it.key().toString()).toBe('k2');
  it.seekLT('k2');
  expect(it.key().toString()).toBe('k1');
  it.setBounds('k3');
  it.first();
  expect(it.key().toString()).toBe('k3');
  it.close();
});

test('string keys survive a flush and a reopen (they are bytes on disk)', async () => {
  await engine.put('persisted', 'yes');
  await engine.flush();
  await engine.compactRange('a', 'z');
  await engine.close();
  engine = await Engine.open(dir);
  expect(text(engine.get('persisted'))).toBe('yes');
});
