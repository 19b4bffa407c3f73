#!/usr/bin/env python3
"""ratio_ci.py: the median of paired ratios with a percentile-bootstrap confidence interval.

    ratio_ci.py LABEL [--confidence=0.95] [--resamples=10000] [--seed=1] < ratios

Reads one ratio per line (tool A / tool B, each from one pair of runs taken back to back), prints

    LABEL: median 1.023 (95% CI 0.998 .. 1.041) over 40 pairs, min 0.91, max 1.22

The interval is the percentile bootstrap of the median: resample the pairs with replacement, take
each resample's median, report the (1-c)/2 and (1+c)/2 quantiles. The seed is fixed so the same
ratios always print the same interval. Exits 1 on fewer than 5 ratios (no interval worth printing).
"""
import argparse
import random
import statistics
import sys


def bootstrap_median_ci(values, confidence, resamples, seed):
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    lo = medians[int((1 - confidence) / 2 * (resamples - 1))]
    hi = medians[int((1 + confidence) / 2 * (resamples - 1))]
    return lo, hi


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("label")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    values = []
    for number, line in enumerate(sys.stdin, 1):
        line = line.strip()
        if not line:
            continue
        try:
            values.append(float(line))
        except ValueError:
            sys.exit(f"ratio_ci: line {number}: not a number")
    if len(values) < 5:
        print(f"{args.label}: only {len(values)} ratios, no interval", file=sys.stderr)
        return 1
    lo, hi = bootstrap_median_ci(values, args.confidence, args.resamples, args.seed)
    print(f"{args.label}: median {statistics.median(values):.3f} "
          f"({args.confidence:.0%} CI {lo:.3f} .. {hi:.3f}) over {len(values)} pairs, "
          f"min {min(values):.3f}, max {max(values):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
