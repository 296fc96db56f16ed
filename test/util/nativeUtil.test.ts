/**
 * The native addon's generic helpers (native/utilExports.c through src/util/nativeUtil.ts):
 * huge-page advice, page release, writeback and hole-punching hints on file ranges, and the
 * thread CPU clock. Each is a hint or a measurement, so these check what the kernel makes
 * observable (zeroed pages, unchanged contents, a clock that moves) and that bad arguments throw.
 *
 * When the addon is not built the suites say why and skip, unless SST_INGEST_REQUIRE_NATIVE=1
 * (set by .ci/run), where they fail (test/support/native.ts).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { nativeUtil } from '../../src/util/nativeUtil';
import { describeIfNative } from '../support/native';

const codec = nativeUtil!;

describeIfNative('huge-page advice', () => {
  it('advises large buffers and typed arrays of any element size, and leaves their contents alone', () => {
    const big = Buffer.alloc(8 << 20, 7);
    expect(codec.adviseHugePages(big)).toBe(true);
    expect(big.every((b) => b === 7)).toBe(true);
    expect(codec.adviseHugePages(new Float64Array(1 << 20))).toBe(true);
    // Smaller than one aligned 2 MiB page: nothing to advise.
    expect(codec.adviseHugePages(new Uint8Array(4096))).toBe(false);
    expect(() => codec.adviseHugePages({} as unknown as Uint8Array)).toThrow(/adviseHugePages/);
  });
});

describeIfNative('page release and writeback hints', () => {
  it('releases the whole pages inside a view, which stays usable and reads zeros there', () => {
    const big = Buffer.alloc(8 << 20, 7);
    expect(codec.releasePages(big)).toBe(true);
    // Every byte at least a page from either end lies in a whole page inside the view.
    const pageBytes = 4096;
    expect(big.subarray(pageBytes, big.length - pageBytes).every((b) => b === 0)).toBe(true);
    big.fill(9, 0, 1 << 20);
    expect(big[12345]).toBe(9);
    // No whole page inside: nothing released, nothing changed.
    const small = Buffer.alloc(100, 5);
    expect(codec.releasePages(small)).toBe(false);
    expect(small.every((b) => b === 5)).toBe(true);
    expect(() => codec.releasePages({} as unknown as Uint8Array)).toThrow(/releasePages/);
  });

  it('starts the writeback of a file range, and refuses bad arguments', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'writeback-'));
    try {
      const file = path.join(dir, 'f');
      const fd = fs.openSync(file, 'w');
      fs.writeSync(fd, Buffer.alloc(1 << 20, 3));
      expect(codec.startWriteback(fd, 0, 1 << 20)).toBe(process.platform === 'linux');
      fs.closeSync(fd);
      expect(fs.readFileSync(file).every((b) => b === 3)).toBe(true);
      // A closed descriptor: the kernel refuses, nothing throws.
      expect(codec.startWriteback(fd, 0, 1 << 20)).toBe(false);
      expect(() => codec.startWriteback(-1, 0, 10)).toThrow(/startWriteback/);
      expect(() => codec.startWriteback(fd, -5, 10)).toThrow(/startWriteback/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeIfNative('file holes and the thread CPU clock', () => {
  it('punches a file range out, keeping the size, and refuses bad arguments', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'punch-'));
    try {
      const file = path.join(dir, 'f');
      fs.writeFileSync(file, Buffer.alloc(1 << 20, 3));
      const fd = fs.openSync(file, 'r+');
      try {
        const punched = codec.punchHole(fd, 1 << 16, 1 << 16);
        expect(fs.fstatSync(fd).size).toBe(1 << 20);
        const contents = fs.readFileSync(file);
        // Where the file system refused, nothing changed; where it punched, the range reads zeros.
        expect(contents.subarray(1 << 16, 2 << 16).every((b) => b === (punched ? 0 : 3))).toBe(true);
        expect(contents.subarray(0, 1 << 16).every((b) => b === 3)).toBe(true);
        expect(contents.subarray(2 << 16).every((b) => b === 3)).toBe(true);
        expect(() => codec.punchHole(fd, 0, -1)).toThrow(/punchHole/);
      } finally {
        fs.closeSync(fd);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("measures the calling thread's CPU time, which moves with work done", () => {
    const before = codec.threadCpuSeconds();
    if (process.platform !== 'linux') return;
    expect(before).toBeGreaterThanOrEqual(0);
    let sink = 0;
    const until = Date.now() + 50;
    while (Date.now() < until) sink += Math.sqrt(sink + 1);
    expect(sink).toBeGreaterThan(0);
    expect(codec.threadCpuSeconds()).toBeGreaterThan(before);
  });
});
