/**
 * usePoll: a JSON document fetched now and again every `intervalMs` after the previous answer
 * (never two requests of one poll in flight, so a slow server is not piled on), paused while the
 * tab is hidden, stopped when the view goes. `path` null polls nothing.
 */
import { useEffect, useState } from 'preact/hooks';
import { Unauthorized, getJson, messageOf } from './api';

export interface PollState<T> {
  data: T | null;
  /** The last failure, cleared by the next success. */
  error: string | null;
  /** Epoch ms of the last success; 0 before it. */
  updatedAtMs: number;
}

/** How often a hidden tab checks whether it is visible again. */
const HIDDEN_RECHECK_MS = 1000;

export function usePoll<T>(path: string | null, intervalMs: number): PollState<T> {
  const [state, setState] = useState<PollState<T>>({ data: null, error: null, updatedAtMs: 0 });
  useEffect(() => {
    if (path === null) return undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const aborter = new AbortController();
    const tick = async (): Promise<void> => {
      if (document.hidden) {
        timer = setTimeout(() => void tick(), HIDDEN_RECHECK_MS);
        return;
      }
      try {
        const data = await getJson<T>(path, aborter.signal);
        if (!stopped) setState({ data, error: null, updatedAtMs: Date.now() });
      } catch (err) {
        if (stopped || err instanceof Unauthorized) return;
        setState((s) => ({ ...s, error: messageOf(err) }));
      }
      if (!stopped) timer = setTimeout(() => void tick(), intervalMs);
    };
    void tick();
    return () => {
      stopped = true;
      aborter.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [path, intervalMs]);
  return state;
}
