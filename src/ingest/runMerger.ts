/**
 * The k-way merge of sorted runs: a binary min-heap of run readers ordered by
 * (key bytewise, source, line), so rows with equal keys come out in input order whichever runs
 * (or parse workers) they went through.
 *
 * Contract: after `next()` returns true, `current` is the reader holding the smallest entry; its
 * key/value bytes are valid until the next call. Memory: one read buffer per run
 * (`readBufferBytes`), nothing per entry.
 */
import { RunInfo, RunReader } from './runFile';

/** Bytewise comparison of a[as, ae) and b[bs, be) without allocating. */
export function compareRanges(a: Buffer, as: number, ae: number, b: Buffer, bs: number, be: number): number {
  const la = ae - as;
  const lb = be - bs;
  const n = la < lb ? la : lb;
  if (n > 32) {
    const c = a.compare(b, bs, bs + n, as, as + n);
    if (c !== 0) return c;
    return la - lb;
  }
  for (let i = 0; i < n; i++) {
    const d = a[as + i] - b[bs + i];
    if (d !== 0) return d;
  }
  return la - lb;
}

function compareReaders(a: RunReader, b: RunReader): number {
  const c = compareRanges(a.buf, a.keyStart, a.keyEnd, b.buf, b.keyStart, b.keyEnd);
  if (c !== 0) return c;
  if (a.source !== b.source) return a.source - b.source;
  return a.line - b.line;
}

export class RunMerger {
  private readonly heap: RunReader[] = [];
  private readonly readers: RunReader[] = [];
  private started = false;
  current: RunReader | null = null;

  /**
   * @param startOffsets per run, where to start reading (a sample offset); default: the start
   * @param deleteRuns unlink each run as soon as it is read to the end (this merge is its only reader)
   */
  constructor(runs: readonly RunInfo[], readBufferBytes: number, startOffsets?: readonly number[], deleteRuns = false) {
    try {
      runs.forEach((r, i) => this.readers.push(new RunReader(r, readBufferBytes, startOffsets?.[i], deleteRuns)));
    } catch (e) {
      this.close();
      throw e;
    }
  }

  next(): boolean {
    const heap = this.heap;
    if (!this.started) {
      this.started = true;
      for (const r of this.readers) {
        if (r.next()) {
          heap.push(r);
          this.siftUp(heap.length - 1);
        }
      }
    } else if (heap.length > 0) {
      if (heap[0].next()) {
        this.siftDown(0);
      } else {
        const last = heap.pop() as RunReader;
        if (heap.length > 0) {
          heap[0] = last;
          this.siftDown(0);
        }
      }
    }
    this.current = heap.length > 0 ? heap[0] : null;
    return this.current !== null;
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    const x = heap[i];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (compareReaders(heap[p], x) <= 0) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = x;
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const n = heap.length;
    const x = heap[i];
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && compareReaders(heap[c + 1], heap[c]) < 0) c++;
      if (compareReaders(heap[c], x) >= 0) break;
      heap[i] = heap[c];
      i = c;
    }
    heap[i] = x;
  }

  close(): void {
    for (const r of this.readers) r.close();
  }
}
