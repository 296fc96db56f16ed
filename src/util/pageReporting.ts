/**
 * Whether this machine is a VM whose balloon device reports free memory to its host, and so
 * whether huge pages are the expensive kind of fresh memory here.
 *
 * Free page reporting (Linux, virtio-balloon feature VIRTIO_BALLOON_F_REPORTING, bit 5): a
 * couple of seconds after a free block of 2 MiB or more appears, the guest tells the host, which
 * takes the memory back; the next touch of it costs the host's own faults again. A transparent
 * huge page needs exactly such a free 2 MiB block, so on these VMs huge pages are the memory the
 * host has taken back, while 4 KiB pages mostly come from smaller free blocks it has not.
 * Measured on the 2-core VM (docs/import-benchmark-history.md, "Eleventh round"): after twelve idle seconds,
 * 32 huge-page faults in a row took 0.3, 0.4, then 20-29 ms each (10-14 ms per MiB), where 4 KiB
 * pages cost 0.45-0.75 ms per MiB.
 *
 * Read from sysfs: each bound balloon device's `features` file, one '0'/'1' character per
 * feature bit, bit 0 first. Read once per process (freePageReportingActive caches it); any read
 * error means "not active".
 */
import * as fs from 'fs';
import * as path from 'path';

export const VIRTIO_BALLOON_DRIVER_DIR = '/sys/bus/virtio/drivers/virtio_balloon';
/** VIRTIO_BALLOON_F_REPORTING, the feature bit of free page reporting. */
export const VIRTIO_BALLOON_F_REPORTING = 5;

/** True when a `features` string (bit 0 first) has the reporting bit set. */
export function reportingInFeatures(features: string): boolean {
  return features.trim().charAt(VIRTIO_BALLOON_F_REPORTING) === '1';
}

/** True when any balloon device bound under `driverDir` negotiated free page reporting. */
export function readFreePageReporting(driverDir: string = VIRTIO_BALLOON_DRIVER_DIR): boolean {
  let names: string[];
  try {
    names = fs.readdirSync(driverDir);
  } catch {
    return false;
  }
  return names.some((name) => {
    try {
      return reportingInFeatures(fs.readFileSync(path.join(driverDir, name, 'features'), 'latin1'));
    } catch {
      return false; // not a device directory (bind, unbind, module, ...)
    }
  });
}

let cached: boolean | null = null;

/** readFreePageReporting() of this machine, read once. */
export function freePageReportingActive(): boolean {
  if (cached === null) cached = readFreePageReporting();
  return cached;
}
