/**
 * Free page reporting detection: the features string of a virtio-balloon device, and the sysfs
 * driver directory it is read from (a temporary stand-in here, so the test does not depend on
 * the machine it runs on).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { VIRTIO_BALLOON_F_REPORTING, readFreePageReporting, reportingInFeatures } from '../../src/util/pageReporting';

/** A features string with the given bits set, as sysfs prints it (64 characters, bit 0 first). */
function features(bits: number[]): string {
  const chars = Array.from({ length: 64 }, () => '0');
  for (const b of bits) chars[b] = '1';
  return `${chars.join('')}\n`;
}

describe('free page reporting', () => {
  it('reads the reporting bit of a features string, and only that bit', () => {
    expect(reportingInFeatures(features([1, 2, VIRTIO_BALLOON_F_REPORTING, 32]))).toBe(true);
    // This VM's balloon, as sysfs printed it: bits 1, 2, 5, 7 and 32.
    expect(reportingInFeatures('0110010100000000000000000000000010000000000000000000000000000000\n')).toBe(true);
    expect(reportingInFeatures(features([0, 1, 2, 3, 4, 6, 7]))).toBe(false);
    expect(reportingInFeatures('')).toBe(false);
  });

  it('finds a reporting device among the driver directory entries, and says no without one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'balloon-'));
    try {
      // What the driver directory holds besides devices: files such as bind and uevent.
      fs.writeFileSync(path.join(dir, 'bind'), '');
      fs.mkdirSync(path.join(dir, 'virtio2'));
      fs.writeFileSync(path.join(dir, 'virtio2', 'features'), features([1, 2]));
      expect(readFreePageReporting(dir)).toBe(false);
      fs.mkdirSync(path.join(dir, 'virtio5'));
      fs.writeFileSync(path.join(dir, 'virtio5', 'features'), features([1, VIRTIO_BALLOON_F_REPORTING]));
      expect(readFreePageReporting(dir)).toBe(true);
      expect(readFreePageReporting(path.join(dir, 'absent'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
