// Per-phase CPU cost of one fresh scrape, in-process (no HTTP): collection per collector, checks,
// rendering and serialisation, averaged over N scrapes of a sysfs tree (bench/gen_tree.py makes
// one). Complements bench/scrape_bench.py, which measures whole processes against node_exporter.
//   rdmahd_engine_bench SYSFS_ROOT [SCRAPES [DCB_DIR]]
// DCB_DIR: a `dcb -j` capture folder (--path.dcb; bench/gen_tree.py writes ROOT/dcb), so the netdev
// and roce collectors read captured files instead of asking this machine's kernel.
// With RDMAHD_BENCH_COLD=1 set, caches are flushed between scrapes (a scrape every 15 s finds them
// cold).
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
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
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SYSFS_ROOT [SCRAPES [DCB_DIR]]\n", argv[0]);
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
