// Per-phase CPU cost of one fresh scrape, in-process (no HTTP): collection per collector, checks,
// rendering and serialisation, averaged over N scrapes of a sysfs tree (bench/gen_tree.py makes
// one). Complements bench/scrape_bench.py, which measures whole processes against node_exporter.
//   rdmahd_engine_bench SYSFS_ROOT [SCRAPES [DCB_DIR]]
// DCB_DIR: a `dcb -j` capture folder (--path.dcb; bench/gen_tree.py writes ROOT/dcb), so the netdev
// and roce collectors read captured files instead of asking this machine's kernel.
// With RDMAHD_BENCH_COLD=1 set, caches are flushed between scrapes (a scrape every 15 s finds them
// cold).
//
// What the error-rate checks (port_errors, roce_transport_errors, netdev_errors; or those that
// RDMAHD_BENCH_CHECKS_OFF=a,b,... names) cost, against the same binary with them disabled in the
// Config, in one process so that both see the same machine load (docs/performance.md):
//   rdmahd_engine_bench --compare-checks SYSFS_ROOT DCB_DIR [PAIRS [SCRAPES_PER_RUN]]
// e.g. python3 bench/gen_tree.py --devices 16 /tmp/tree &&
//      rdmahd_engine_bench --compare-checks /tmp/tree/sys /tmp/tree/dcb 60 20
// Runs PAIRS pairs of short runs (SCRAPES_PER_RUN scrapes each, checks on and off back to back, the
// order alternating between pairs) and prints the median CPU per scrape of each and the median of
// the pairs' on/off ratios with a percentile-bootstrap 95% interval (as bench/ratio_ci.py does).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/collection_engine.h"

namespace {
// The whole process's: collections run on the engine's worker thread, not the caller's.
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The error-rate checks (they record every error counter into the history each collection): what
// --compare-checks switches off, unless RDMAHD_BENCH_CHECKS_OFF names others (comma-separated).
std::vector<std::string> ChecksOff() {
  const char* env = std::getenv("RDMAHD_BENCH_CHECKS_OFF");
  if (env == nullptr) {
    return {"port_errors", "roce_transport_errors", "netdev_errors"};
  }
  std::vector<std::string> out;
  for (std::string rest = env; !rest.empty();) {
    const auto comma = rest.find(',');
    if (comma != 0) out.push_back(rest.substr(0, comma));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  return out;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// CPU seconds of `scrapes` scrapes (collection with its checks, render, serialisation).
double RunScrapes(rdmahd::CollectionEngine& engine, const std::shared_ptr<const rdmahd::Config>& config,
                  int scrapes, rdmahd::MetricSink& sink, std::string& text) {
  const double t0 = ProcessCpuSeconds();
  for (int i = 0; i < scrapes; ++i) {
    auto report = engine.Collect(config);
    sink.Clear();
    (void)engine.Render(*report, sink);
    sink.SerializeTo(text);
  }
  return ProcessCpuSeconds() - t0;
}

int CompareChecks(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s --compare-checks SYSFS_ROOT DCB_DIR [PAIRS [SCRAPES_PER_RUN]]\n", argv[0]);
    return 2;
  }
  const int pairs = argc > 4 ? std::atoi(argv[4]) : 60;
  const int scrapes = argc > 5 ? std::atoi(argv[5]) : 20;
  if (pairs < 5 || scrapes < 1) {
    std::fprintf(stderr, "at least 5 pairs and 1 scrape per run\n");
    return 2;
  }
  auto on = std::make_shared<rdmahd::Config>();
  on->scrape_cache_window = std::chrono::milliseconds(0);
  auto off = std::make_shared<rdmahd::Config>(*on);
  const std::vector<std::string> checks_off = ChecksOff();
  for (const std::string& name : checks_off) off->checks[name] = false;
  rdmahd::CollectionEngine engine(rdmahd::NodeFs(argv[2], "/nonexistent", argv[3]));
  rdmahd::MetricSink sink;
  std::string text;
  // Discovery, descriptor opening and the history's first series are one-time costs.
  (void)RunScrapes(engine, on, 3, sink, text);
  std::vector<double> cpu_on, cpu_off, ratios;
  for (int p = 0; p < pairs; ++p) {
    double a = 0, b = 0;
    if (p % 2 == 0) {
      a = RunScrapes(engine, on, scrapes, sink, text);
      b = RunScrapes(engine, off, scrapes, sink, text);
    } else {
      b = RunScrapes(engine, off, scrapes, sink, text);
      a = RunScrapes(engine, on, scrapes, sink, text);
    }
    cpu_on.push_back(a / scrapes);
    cpu_off.push_back(b / scrapes);
    ratios.push_back(a / b);
  }
  // Percentile bootstrap of the median ratio, fixed seed: the same ratios print the same interval.
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<std::size_t> pick(0, ratios.size() - 1);
  constexpr int kResamples = 10000;
  std::vector<double> medians, resample(ratios.size());
  medians.reserve(kResamples);
  for (int r = 0; r < kResamples; ++r) {
    for (double& x : resample) x = ratios[pick(rng)];
    medians.push_back(Median(resample));
  }
  std::sort(medians.begin(), medians.end());
  const double lo = medians[static_cast<std::size_t>(0.025 * (kResamples - 1))];
  const double hi = medians[static_cast<std::size_t>(0.975 * (kResamples - 1))];
  std::printf("checks off:");
  for (const std::string& name : checks_off) std::printf(" %s", name.c_str());
  std::printf("\n%d pairs of %d scrapes: CPU per scrape median %.3f ms checks on, %.3f ms checks off\n", pairs,
              scrapes, Median(cpu_on) * 1e3, Median(cpu_off) * 1e3);
  std::printf("on/off: median %.3f (95%% CI %.3f .. %.3f), min %.3f, max %.3f\n", Median(ratios), lo, hi,
              *std::min_element(ratios.begin(), ratios.end()), *std::max_element(ratios.begin(), ratios.end()));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--compare-checks") == 0) return CompareChecks(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT [SCRAPES [DCB_DIR]]\n       %s --compare-checks SYSFS_ROOT DCB_DIR [PAIRS [SCRAPES_PER_RUN]]\n", argv[0], argv[0]);
    return 2;
  }
  const int scrapes = argc > 2 ? std::atoi(argv[2]) : 50;
  auto config = std::make_shared<rdmahd::Config>();
  config->scrape_cache_window = std::chrono::milliseconds(0);
  // Without DCB_DIR, a capture folder that does not exist: the bench measures the collectors, not
  // this machine's netlink.
  rdmahd::CollectionEngine engine(rdmahd::NodeFs(argv[1], "/nonexistent", argc > 3 ? argv[3] : "/nonexistent"));
  (void)engine.Collect(config);  // discovery and descriptor opening are a one-time cost

  std::map<std::string, double> collector_wall;
  double collect = 0, render = 0, serialize = 0;
  std::size_t bytes = 0, series = 0;
  // Reused across scrapes, as the daemon reuses its sink and exposition buffer.
  rdmahd::MetricSink sink;
  std::string text;
  // RDMAHD_BENCH_COLD=1: stream through 64 MiB between scrapes, as the rest of a node does between
  // two scrapes 15 s apart, so caches are cold the way a real scrape finds them.
  const bool cold = std::getenv("RDMAHD_BENCH_COLD") != nullptr;
  std::vector<char> thrash(cold ? 64u << 20 : 0);
  for (int i = 0; i < scrapes; ++i) {
    if (cold) {
      for (std::size_t k = 0; k < thrash.size(); k += 64) thrash[k] = static_cast<char>(thrash[k] + 1);
    }
    double t0 = ProcessCpuSeconds();
    auto report = engine.Collect(config);
    double t1 = ProcessCpuSeconds();
    sink.Clear();
    (void)engine.Render(*report, sink);
    double t2 = ProcessCpuSeconds();
    sink.SerializeTo(text);
    double t3 = ProcessCpuSeconds();
    collect += t1 - t0;
    render += t2 - t1;
    serialize += t3 - t2;
    bytes = text.size();
    series = sink.sample_count();
    for (const auto& o : report->snapshot.outcomes) collector_wall[o.collector] += o.duration.count();
  }
  auto ms = [&](double s) { return s / scrapes * 1e3; };
  std::printf("%zu series, %zu bytes per scrape, %d scrapes\n", series, bytes, scrapes);
  std::printf("collect+checks %.3f ms CPU (collectors' wall time:", ms(collect));
  for (const auto& [name, s] : collector_wall) std::printf(" %s %.3f", name.c_str(), ms(s));
  std::printf(")\nrender %.3f ms, serialize %.3f ms, total %.3f ms CPU per scrape\n", ms(render),
              ms(serialize), ms(collect + render + serialize));
  return 0;
}
