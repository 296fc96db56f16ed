/**
 * Write recovery: a full disk is a state the server comes back from without a restart.
 *
 * When the engine stops taking writes because a flush or a WAL write found the disk full
 * (Engine.writeError, resumable), every write answers 507 NO_SPACE and GET /healthz answers 503
 * "degraded"; reads go on. This module polls every RECOVERY_POLL_MS while that lasts and calls
 * Engine.resume(), which switches to a new WAL if needed, flushes the memtables holding every
 * acknowledged write and only then takes writes again. A resume that finds space still short
 * fails harmlessly and is tried again at the next poll. An error that is not a full disk is left
 * alone (it needs a reopen: the server keeps serving reads, writes answer 500 IO).
 *
 * Contract: at most one resume() at a time; stop() ends the polling and waits for a running
 * resume, before the engine closes.
 */
import type { Engine } from '../engine/engine';

/** How often a stopped engine is asked to resume. */
export const RECOVERY_POLL_MS = 1000;

export class WriteRecovery {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** Successful resumes (for stats and tests). */
  resumes = 0;

  constructor(
    private readonly engine: Engine,
    private readonly log: (line: string) => void,
    private readonly pollMs: number = RECOVERY_POLL_MS,
  ) {}

  start(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setInterval(() => this.poll(), this.pollMs);
    this.timer.unref();
  }

  private poll(): void {
    const error = this.engine.writeError;
    if (error === null || !error.resumable || this.running !== null || this.stopped) return;
    this.running = this.engine
      .resume()
      .then(
        () => {
          this.resumes++;
          this.log('disk space is back: the database takes writes again');
        },
        () => undefined, // still short of space: the next poll tries again
      )
      .finally(() => {
        this.running = null;
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
