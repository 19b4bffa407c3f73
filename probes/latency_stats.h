// LatencyStats: the statistics perftest's ib_send_lat prints (t_min, t_max, t_typical, t_avg,
// 99% and 99.9% percentiles), computed the same way so that a probe's figures can be compared
// with a hand-run ib_send_lat line for line.
//
// perftest's arithmetic, as its report does it (learned from its print_report_lat, not copied):
//   * the input is one sample per iteration after the first (iterations - 1 of them), each half
//     the time between two consecutive post times, in microseconds;
//   * the samples are sorted ascending and the 2 largest are set aside: m = n - 2 samples remain;
//   * t_typical is the median of those m: the middle one when m is odd, the mean of the two middle
//     ones when m is even;
//   * t_avg is the mean of those m, t_stdev their standard deviation (dividing by m; perftest
//     truncates each deviation to an integer number of cycles first, a quirk not copied here);
//   * t_min is sorted[0]; t_max is sorted[m] (the larger of the two set aside is never reported:
//     perftest's t_max is the second largest sample);
//   * p99 is sorted[ceil(m * 0.99)] and p99.9 sorted[ceil(m * 0.999)], the product computed in
//     double precision as perftest does (so m = 100 gives index 99, m = 997 gives 988 and 997).
//     The index is at most m, inside the array because of the two samples set aside.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace rdmahd {

struct LatencyStats {
  std::size_t samples = 0;  // n: samples given (iterations - 1)
  std::size_t measured = 0;  // m = n - 2: samples in t_typical and t_avg
  double min_us = 0;
  double max_us = 0;
  double typical_us = 0;  // the median
  double average_us = 0;
  double stdev_us = 0;
  double p99_us = 0;
  double p99_9_us = 0;
};

// Fewer than 3 samples leave nothing after the 2 largest are set aside: nullopt. (perftest
// refuses fewer than 5 iterations; config validation keeps latency_iterations >= 5.) The input
// need not be sorted; it is taken by value because it is sorted in place.
std::optional<LatencyStats> ComputeLatencyStats(std::vector<double> half_round_trip_us);
// The same, sorting the caller's samples in place (ascending), for a caller that uses them sorted.
std::optional<LatencyStats> ComputeLatencyStatsInPlace(std::vector<double>& half_round_trip_us);

}  // namespace rdmahd
