/**
 * The memtable skiplist's native searches (native/engineExports.c over native/skiplistSearch.c,
 * in the addon src/util/nativeAddon.ts loads), or null when the addon is not in use or
 * SST_INGEST_NATIVE_SKIPLIST=0 (to measure the JavaScript walk, and to test it alone).
 *
 * Why: a lookup or a random insert in a memtable of a few hundred thousand entries walks about
 * 20 links, comparing a key at each; that walk in JavaScript was three quarters of the CPU of a
 * workload whose puts and gets stay in memtables (bench/node-peers.ts, profiled with perf). The
 * same walk natively is one crossing.
 *
 * Contract (see the C files): both searches read the arena of src/engine/memtable/skiplist.ts
 * as it is, count their key comparisons into counters[0], and answer -2 for a node outside the
 * arena (a bug: SkipList asserts) and, for the splice, -3 when the key is already there.
 */
import { nativeFace } from '../../util/nativeAddon';

export interface NativeSkiplist {
  /** The last node whose key is < target[targetStart, +targetLength) (0: the head), or -2. */
  skiplistLastBefore(
    arena: Uint8Array,
    heightInUse: number,
    target: Uint8Array,
    targetStart: number,
    targetLength: number,
    counters: Float64Array,
  ): number;
  /** An insert's predecessors at every level into prev (length >= 12): 0, -2 or -3 (key present). */
  skiplistFindSplice(
    arena: Uint8Array,
    heightInUse: number,
    keyStart: number,
    keyLength: number,
    prev: Uint32Array,
    counters: Float64Array,
  ): number;
}

export const SKIPLIST_BAD_NODE = -2;
export const SKIPLIST_KEY_PRESENT = -3;

const loaded = nativeFace<NativeSkiplist>({ skiplistLastBefore: true, skiplistFindSplice: true });

export const nativeSkiplist: NativeSkiplist | null = process.env.SST_INGEST_NATIVE_SKIPLIST === '0' ? null : loaded.face;

/** Why the searches are or are not native ("loaded <file>" when they are). */
export const nativeSkiplistStatus: string = loaded.status;
