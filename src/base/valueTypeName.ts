/** Names of internal-key value types as printed by `sst dump` and reports (stable: scripts read them). */
const NAMES: Record<number, string> = {
  0x00: 'delete',
  0x01: 'put',
  0x02: 'merge',
  0x07: 'singleDelete',
  0x0f: 'rangeDelete',
  0x11: 'blobIndex',
  0x14: 'deleteWithTimestamp',
  0x16: 'wideColumnEntity',
};

export function valueTypeName(type: number): string {
  return NAMES[type] ?? `unknown(0x${type.toString(16)})`;
}
