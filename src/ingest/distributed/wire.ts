/**
 * Task inputs and results as text, for the job engine (BullMQ keeps job data and return values
 * as JSON in Redis): plain JSON, except that byte arrays (Buffer, Uint8Array: keys, samples) are
 * written as {"$hex": "..."} and read back as Buffers, which JSON alone would turn into arrays of
 * numbers or objects with numeric keys.
 */

const HEX_TAG = '$hex';

/** JSON text of `value`, byte arrays as hex. */
export function toWire(value: unknown): string {
  return JSON.stringify(value, function replacer(this: Record<string, unknown>, key: string, v: unknown): unknown {
    const raw = this[key];
    if (raw instanceof Uint8Array) return { [HEX_TAG]: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('hex') };
    return v;
  });
}

/** The value of toWire's text, byte arrays as Buffers. The caller knows its type. */
export function fromWire<T>(text: string): T {
  return JSON.parse(text, (_key, v: unknown) => {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const hex = (v as Record<string, unknown>)[HEX_TAG];
      if (typeof hex === 'string' && Object.keys(v).length === 1) return Buffer.from(hex, 'hex');
    }
    return v;
  }) as T;
}
