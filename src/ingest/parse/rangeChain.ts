/**
 * The parse phase's end: the results of every range of a RangePlan (rangePlan.ts), walked in
 * input order into one ParseOutcome: record boundaries checked, wrong guesses parsed again, line
 * offsets totalled, bad rows counted against --max-bad-rows.
 *
 * A range started at a guessed boundary (after an LF that may sit inside a quoted field); the
 * range before it reports the first true record boundary at or after its stop (endOffset). When
 * the two differ, the later range's output is discarded (its runs deleted) and it is parsed again
 * from the true boundary, through `rerun`, which runs one range the way the caller runs them all.
 *
 * Contract: `results[i]` is the result of `plan.tasks[i]`, or null for a range not run (it is run
 * through `rerun` here). The outcome's runs are the ranges' in input order, its sources one per
 * range with the absolute line offset of the range's first byte. The bad row past --max-bad-rows
 * that comes first in input order fails the walk (TooManyBadRowsError, with the bad rows so far).
 */
import * as fs from 'fs';
import { assert } from '../../util/errors';
import { BadRow } from './rowSink';
import { InputNamer, ParseOutcome, ParseTask, ParseTaskResult, SourceInfo, tooManyBadRowsError } from './parseTypes';
import { RangePlan } from './rangePlan';

/** Runs one range (again): the caller's way of running them (a worker, in-process, a remote task). */
export type RangeRunner = (task: ParseTask) => Promise<ParseTaskResult>;

/** The walk's totals so far. */
interface ChainTotals {
  sources: SourceInfo[];
  badRows: BadRow[];
  badRowCount: number;
  rowsRead: number;
  rangesRetried: number;
}

/** The ranges' results as one outcome; see the module comment. Mutates `results` (re-run ranges replace theirs). */
export async function chainRangeResults(
  plan: RangePlan,
  results: (ParseTaskResult | null)[],
  rerun: RangeRunner,
  maxBadRows: number,
  nameOf: InputNamer,
): Promise<ParseOutcome> {
  assert(results.length === plan.tasks.length, `${results.length} results for ${plan.tasks.length} ranges`);
  const totals: ChainTotals = { sources: [], badRows: [], badRowCount: 0, rowsRead: 0, rangesRetried: 0 };
  let prev: ParseTaskResult | null = null;
  let lineOffset = 0;
  for (const t of plan.tasks) {
    let r = results[t.taskId];
    if (t.firstOfFile) {
      lineOffset = plan.dataStartLines[t.fileIndex] - 1;
    } else if (prev !== null && (r === null || r.startOffset !== prev.endOffset)) {
      // Wrong guess (or never run): parse again from where the previous range really ended.
      if (r !== null) for (const run of r.runs) fs.rmSync(run.path, { force: true });
      const fixed: ParseTask = { ...t, startOffset: prev.endOffset, stopAtOffset: Math.max(t.stopAtOffset, prev.endOffset) };
      if (r !== null) totals.rangesRetried++;
      r = await rerun(fixed);
      results[t.taskId] = r;
    }
    if (r === null) r = results[t.taskId] = await rerun(t);
    assert(t.firstOfFile || prev === null || r.startOffset === prev.endOffset, `range ${t.taskId} does not start where the last ended`);
    totals.sources[t.source] = { file: t.file, lineOffset };
    addRangeBadRows(totals, r, lineOffset, maxBadRows, nameOf(t.file));
    totals.rowsRead += r.rows;
    lineOffset += r.lineFeeds;
    prev = r;
  }
  const runs = plan.tasks.flatMap((t) => (results[t.taskId] as ParseTaskResult).runs);
  const { sources, badRows, badRowCount, rowsRead, rangesRetried } = totals;
  const inputBytes = plan.sizes.reduce((a, b) => a + b, 0);
  return { runs, sources, rowsRead, badRowCount, badRows, bound: plan.bound, inputBytes, ranges: plan.tasks.length, rangesRetried };
}

/** Counts a range's bad rows; throws at the first one past maxBadRows in input order. */
function addRangeBadRows(totals: ChainTotals, r: ParseTaskResult, lineOffset: number, maxBadRows: number, name: string): void {
  if (totals.badRowCount + r.badRowCount > maxBadRows) {
    const fatalIndex = maxBadRows - totals.badRowCount;
    const fatal = r.badRows[fatalIndex];
    for (const b of r.badRows.slice(0, fatalIndex + 1)) totals.badRows.push(b);
    throw tooManyBadRowsError({ ...fatal, line: lineOffset + fatal.line }, name, maxBadRows, totals.badRows, totals.sources);
  }
  for (const b of r.badRows) totals.badRows.push(b);
  totals.badRowCount += r.badRowCount;
}
