/**
 * auto's per-chunk policy (StrategyChooser in src/conflict/adaptiveScan.ts), fed chunk timings
 * directly, so each rule is checked without a clock or an engine:
 * - a confident first choice runs full chunks at once; an unconfident one a time-capped probe,
 *   then an exploration of the other strategy;
 * - one disturbed chunk (a pause: 10x its strategy's cost) does not make the scan switch, and
 *   the strategy that really is cheaper still takes over;
 * - what the chunk after an exploration costs beyond its estimate counts in the exploration
 *   budget, so a scan where coming back is dear explores less often.
 */
import { ChunkPlan, ChunkTiming, EXPLORE_SIZE, MAX_CHUNK_SIZE, StrategyChooser } from '../../src/conflict/adaptiveScan';

/** A chunk of `keys` SST keys at `nsPerKey`, plus `extraMs` its estimate leaves out. */
function timing(keys: number, nsPerKey: number, extraMs = 0): ChunkTiming {
  const estimateMs = (keys * nsPerKey) / 1e6;
  return { keys, totalMs: estimateMs + extraMs, estimateKeys: keys, estimateMs };
}

/** Runs `chunks` chunks at the given steady costs per key; returns the plans made. */
function run(
  chooser: StrategyChooser,
  chunks: number,
  costNs: (plan: ChunkPlan, index: number) => number,
  extraMs: (plan: ChunkPlan, previous: ChunkPlan | null) => number = () => 0,
): ChunkPlan[] {
  const plans: ChunkPlan[] = [];
  for (let i = 0; i < chunks; i++) {
    const plan = chooser.plan();
    const keys = plan.strategy === 'get' ? plan.size : plan.size / 2;
    chooser.record(plan, timing(keys, costNs(plan, i), extraMs(plan, plans.length > 0 ? plans[plans.length - 1] : null)));
    plans.push(plan);
  }
  return plans;
}

test('a confident first choice runs full chunks; an unconfident one probes, then explores the other', () => {
  const confident = new StrategyChooser({ strategy: 'get', confident: true });
  expect(confident.plan()).toEqual({ strategy: 'get', size: MAX_CHUNK_SIZE, exploring: false, probe: false });

  const unsure = new StrategyChooser({ strategy: 'seek', confident: false });
  const first = unsure.plan();
  expect(first).toEqual({ strategy: 'seek', size: EXPLORE_SIZE.seek, exploring: false, probe: true });
  unsure.record(first, timing(8, 1000));
  expect(unsure.plan()).toMatchObject({ strategy: 'get', exploring: true, probe: true });
});

test('one disturbed chunk does not make the scan switch; a cheaper strategy still takes over', () => {
  // get costs 300 ns a key, seek 1000: get is found and kept, though its fifth chunk is paused.
  const chooser = new StrategyChooser({ strategy: 'seek', confident: false });
  const plans = run(chooser, 40, (plan, i) => (plan.strategy === 'get' ? (i === 5 ? 3000 : 300) : 1000));
  expect(plans[0].strategy).toBe('seek');
  const afterProbe = plans.slice(1);
  expect(afterProbe.filter((p) => !p.exploring).every((p) => p.strategy === 'get')).toBe(true);
  expect(chooser.summary().switches).toBe(1);
  expect(plans[5]).toMatchObject({ strategy: 'get', exploring: false });
});

test('the cost of coming back from an exploration counts in its budget', () => {
  // seek is preferred at 200 ns a key; get is explored at 300. Coming back costs the seek chunk
  // after each exploration 0.05 ms more (the catch-up and caches), charged to the budget.
  const cost = (plan: ChunkPlan): number => (plan.strategy === 'seek' ? 200 : 300);
  const backCost = (plan: ChunkPlan, previous: ChunkPlan | null): number => (previous?.exploring === true && !plan.exploring ? 0.05 : 0);
  const explorations = (extra: typeof backCost): number => {
    const chooser = new StrategyChooser({ strategy: 'seek', confident: true });
    run(chooser, 400, cost, extra);
    return chooser.summary().explorations;
  };
  const free = explorations(() => 0);
  const charged = explorations(backCost);
  expect(free).toBeGreaterThan(0);
  expect(charged).toBeGreaterThan(0);
  expect(charged).toBeLessThan(free / 2);
});
