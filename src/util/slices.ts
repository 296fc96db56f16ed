/**
 * Sliced work: long CPU-bound loops written as generators that `yield` at fine-grained, cheap
 * points (every few hundred keys), run either in one go or cooperatively, handing the event loop
 * back whenever a slice has run for `sliceMs`. A process that serves reads and writes while an
 * import checks or rewrites its files keeps answering: no slice holds the loop much longer than
 * `sliceMs` plus one step between yields.
 *
 * Contract:
 * - `runSlicedSync(gen)` runs to completion without returning to the event loop (the same work,
 *   for callers that own the process: benchmarks, recovery, the one-shot CLI).
 * - `runSliced(gen, opts)` returns to the event loop (setImmediate, so I/O callbacks run) once a
 *   slice has run `sliceMs`; `onPause` runs before each return and `onResume` after it, so a caller
 *   can exclude other work from what it meters (key comparisons, CPU time).
 * - If the generator throws, the error propagates; if the driver stops early (an exception from a
 *   hook), the generator's finally blocks run (return()).
 */
import { crashPoint } from './crashPoints';
import { setImmediate as yieldToEventLoop } from 'timers/promises';

export type Sliced<T> = Generator<void, T, void>;

/** A slice's length before the event loop gets a turn: well under the 50 ms a writer may wait. */
export const DEFAULT_SLICE_MS = 4;

export interface SliceOptions {
  sliceMs?: number;
  onPause?: () => void;
  onResume?: () => void;
}

export function runSlicedSync<T>(gen: Sliced<T>): T {
  for (;;) {
    const step = gen.next();
    if (step.done === true) return step.value;
  }
}

export async function runSliced<T>(gen: Sliced<T>, opts: SliceOptions = {}): Promise<T> {
  const sliceMs = opts.sliceMs ?? DEFAULT_SLICE_MS;
  let sliceStartMs = performance.now();
  let finished = false;
  try {
    for (;;) {
      const step = gen.next();
      if (step.done === true) {
        finished = true;
        return step.value;
      }
      if (performance.now() - sliceStartMs < sliceMs) continue;
      crashPoint('slice.pause');
      opts.onPause?.();
      await yieldToEventLoop();
      opts.onResume?.();
      sliceStartMs = performance.now();
    }
  } finally {
    if (!finished) gen.return(undefined as never);
  }
}
