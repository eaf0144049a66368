/**
 * Statistics of a set of call durations, exact: from every duration, sorted once.
 *
 * Percentiles are nearest-rank: the p-th percentile of n sorted durations
 * d[1] <= ... <= d[n] is d[ceil(p/100 * n)], the smallest duration that at least p% of
 * the calls take no longer than. It is always one of the measured durations (never an
 * interpolation between two), and p100 is the maximum.
 *
 * The histogram has log2 buckets: bucket 0 holds durations below 1 (clock unit),
 * bucket k >= 1 those from 2^(k-1) up to (not including) 2^k.
 */

export interface DurationStats {
  /** Calls measured. */
  calls: number;
  /** Their durations added up. */
  total: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** One histogram bucket: `count` durations d with from <= d < to. */
export interface HistogramBucket {
  from: number;
  to: number;
  count: number;
}

/** The nearest-rank `p`-th percentile (0 < p <= 100) of `sorted` (ascending, not empty). */
export function nearestRank(sorted: Float64Array, p: number): number {
  return rankIn(sorted, 0, sorted.length, p);
}

/** {@link nearestRank} of d[from, from + n) (ascending, n > 0). */
function rankIn(d: Float64Array, from: number, n: number, p: number): number {
  // p/100 * n as (p * n) / 100: 90 * 10 / 100 is exactly 9, where 0.9 * 10 is not.
  const rank = Math.ceil((p * n) / 100);
  return d[from + Math.min(n, Math.max(1, rank)) - 1]!;
}

/** The statistics of `sorted` (ascending, not empty). */
export function durationStats(sorted: Float64Array): DurationStats {
  return durationStatsIn(sorted, 0, sorted.length);
}

/** {@link durationStats} of d[from, from + n) (ascending, n > 0): no subarray made. */
export function durationStatsIn(d: Float64Array, from: number, n: number): DurationStats {
  let total = 0;
  for (let i = from; i < from + n; i++) total += d[i]!;
  return {
    calls: n,
    total,
    min: d[from]!,
    p50: rankIn(d, from, n, 50),
    p90: rankIn(d, from, n, 90),
    p99: rankIn(d, from, n, 99),
    max: d[from + n - 1]!,
  };
}

/** The log2 bucket of duration `d` (see the module comment). */
export function bucketOf(d: number): number {
  if (!(d >= 1)) return 0;
  let k = 1;
  for (let top = 2; top <= d; top *= 2) k++;
  return k;
}

/** The bucket's lower bound, inclusive. */
const bucketFrom = (k: number) => (k === 0 ? 0 : 2 ** (k - 1));

/**
 * The log2 histogram of `sorted` (ascending): the buckets from the shortest
 * duration's to the longest's, empty ones between included.
 */
export function log2Histogram(sorted: Float64Array): HistogramBucket[] {
  const buckets: HistogramBucket[] = [];
  const n = sorted.length;
  if (n === 0) return buckets;
  const last = bucketOf(sorted[n - 1]!);
  let i = 0;
  for (let k = bucketOf(sorted[0]!); k <= last; k++) {
    const to = 2 ** k;
    let count = 0;
    // Sorted: the bucket's durations are the next ones below its upper bound.
    while (i < n && (k === last || sorted[i]! < to)) {
      i++;
      count++;
    }
    buckets.push({ from: bucketFrom(k), to, count });
  }
  return buckets;
}
