/**
 * Crash points: named places where a test may have this process killed, to prove that a crash
 * there loses nothing acknowledged and leaves work a resume can finish (the idea of RocksDB's
 * TEST_KILL_RANDOM and sync points, without their code).
 *
 * Contract: `crashPoint(name)` does nothing unless SST_INGEST_CRASH_AT is set, as
 * `name:n[,name:n...]`; then the n-th time (1-based) a thread passes `name` (each worker thread
 * counts its own passes) the process is sent SIGKILL, which no handler can catch, so nothing
 * after that point runs: no cleanup, no buffered write; a point passed in a worker kills the
 * whole process, as a real crash would. The variable is parsed once; unset, a point costs one branch.
 * An entry `name:n:SIGTERM` (or SIGINT) sends that signal instead: what a scheduler's timeout
 * sends, delivered at a known place rather than after a delay a fast machine may outrun; the
 * process's own handler then decides what happens, so code after the point does run.
 */

const spec = parseSpec(process.env.SST_INGEST_CRASH_AT);
const passes = new Map<string, number>();

interface CrashSpec {
  atPass: number;
  signal: NodeJS.Signals;
}

function parseSpec(text: string | undefined): Map<string, CrashSpec> | null {
  if (text === undefined || text === '') return null;
  const points = new Map<string, CrashSpec>();
  for (const part of text.split(',')) {
    const m = /^([A-Za-z0-9_.-]+):([0-9]+)(?::(SIGKILL|SIGTERM|SIGINT))?$/.exec(part.trim());
    if (m === null) throw new Error(`SST_INGEST_CRASH_AT: "${part}" is not name:count[:SIGTERM|SIGINT]`);
    points.set(m[1], { atPass: Number(m[2]), signal: (m[3] ?? 'SIGKILL') as NodeJS.Signals });
  }
  return points;
}

export function crashPoint(name: string): void {
  if (spec === null) return;
  const at = spec.get(name);
  if (at === undefined) return;
  const n = (passes.get(name) ?? 0) + 1;
  passes.set(name, n);
  if (n === at.atPass) process.kill(process.pid, at.signal);
}
