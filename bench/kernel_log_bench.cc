// How many kernel log records a second the kernel log decoders can take: each record parsed as
// /dev/kmsg hands it over and classified by the built-in rules. The mix is a flood (the ACCESS_REG
// failures a restricted PF logs on every counter read), ordinary lines no rule matches, and the
// events the rules exist for; plus the worst case, records at the message cap.
// Then the whole collector (collectors/kernel_log.h) under the flood the issue names: 10,000
// ACCESS_REG lines a second for 60 s, one collection a second, each taking its second's records
// from a source that hands them over as /dev/kmsg would (parse, rules, attribution to a device,
// counts, the ring of recent events, the facts): CPU per collection of 10,000 records, and the
// process's memory after 1 s and after 60 s of it, which must not grow with the records.
// Usage: rdmahd_kernel_log_bench [records]   (default 500000)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "collectors/kernel_log.h"
#include "common/node_fs.h"
#include "config/config.h"
#include "parsers/kernel_event_rules.h"
#include "parsers/kernel_log_record.h"

namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Run {
  double records_per_cpu_second;
  std::size_t events;
};

Run Measure(const rdmahd::KernelEventClassifier& classifier, const std::vector<std::string>& records, std::size_t n) {
  std::size_t events = 0;
  const double start = CpuSeconds();
  for (std::size_t i = 0; i < n; ++i) {
    auto r = rdmahd::ParseKmsgRecord(records[i % records.size()]);
    if (r.ok() && classifier.Classify(*r)) ++events;
  }
  const double cpu = CpuSeconds() - start;
  return {static_cast<double>(n) / cpu, events};
}

// The process's resident memory now (VmRSS), in KiB; 0 if unknown.
long RssKiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// Hands over `per_collection` copies of one record per collection, with rising sequence numbers
// and times, then says there is nothing more (EAGAIN), as /dev/kmsg does between collections.
class FloodSource : public rdmahd::KernelLogSource {
 public:
  FloodSource(std::string message, std::size_t per_collection, std::chrono::microseconds& now)
      : message_(std::move(message)), per_collection_(per_collection), now_(now) {}
  Read Next(rdmahd::KernelLogRecord& record, std::string&) override {
    if (given_ == per_collection_) {
      given_ = 0;
      return Read::kNoMore;
    }
    ++given_;
    ++seq_;
    // The record as read(2) gives it: header, message, the dictionary.
    text_ = "3," + std::to_string(seq_) + "," + std::to_string(now_.count()) + ",-;" + message_;
    auto r = rdmahd::ParseKmsgRecord(text_);
    if (!r.ok()) return Read::kNotARecord;
    record = std::move(*r);
    return Read::kRecord;
  }

 private:
  std::string message_, text_;
  std::size_t per_collection_, given_ = 0;
  std::uint64_t seq_ = 0;
  std::chrono::microseconds& now_;
};

// The collector under 10,000 records a second for `seconds` seconds, one collection a second.
void MeasureCollector(const std::string& message) {
  constexpr std::size_t kPerSecond = 10000;
  constexpr int kSeconds = 60;
  std::chrono::microseconds mono = std::chrono::hours(1);
  std::int64_t unix_now = 1'780'000'000;
  rdmahd::KernelLogCollector collector(
      [&](const std::string&, std::string&) -> std::unique_ptr<rdmahd::KernelLogSource> {
        return std::make_unique<FloodSource>(message, kPerSecond, mono);
      },
      rdmahd::KernelLogClock{[&] { return mono; }, [&] { return unix_now; }});
  rdmahd::Topology topology;
  rdmahd::TopologyDevice d;
  d.name = "mlx5_0";
  d.pci_address = "0000:05:00.0";
  d.ports.push_back(rdmahd::TopologyPort{1, "Ethernet", "ens1f0np0", {}, {}});
  topology.devices = {d};
  const rdmahd::NodeFs fs = rdmahd::NodeFs("/nonexistent/sys", "/nonexistent/proc").AskingKernelForTest();
  const rdmahd::Config config;
  std::vector<double> cpu_ms;
  long rss_after_first = 0;
  std::uint64_t events = 0;
  for (int s = 0; s < kSeconds; ++s) {
    rdmahd::Snapshot snapshot;
    rdmahd::CollectorOutcome outcome;
    const double start = CpuSeconds();
    const rdmahd::Status st = collector.Collect(rdmahd::CollectContext{fs, config, topology}, snapshot, outcome);
    cpu_ms.push_back((CpuSeconds() - start) * 1e3);
    if (!st.ok() || !outcome.errors.empty()) {
      std::fprintf(stderr, "collection failed\n");
      std::exit(1);
    }
    const auto* facts = snapshot.Get<rdmahd::KernelLogFacts>();
    events = 0;
    for (const auto& dev : facts->devices)
      for (const auto& [key, count] : dev.counts) events += count.count;
    if (s == 0) rss_after_first = RssKiB();
    mono += std::chrono::seconds(1);
    ++unix_now;
  }
  std::sort(cpu_ms.begin(), cpu_ms.end());
  const long rss_end = RssKiB();
  std::printf("\ncollector, ACCESS_REG flood at 10,000 records/s for %d s (one collection a second):\n", kSeconds);
  std::printf("  CPU per collection of 10,000 records: median %.1f ms, max %.1f ms (%.1f%% of one core)\n",
              cpu_ms[cpu_ms.size() / 2], cpu_ms.back(), cpu_ms[cpu_ms.size() / 2] / 10.0);
  std::printf("  events counted: %llu (all %d x 10,000 records attributed to mlx5_0)\n",
              static_cast<unsigned long long>(events), kSeconds);
  std::printf("  resident memory: %ld KiB after 1 s, %ld KiB after %d s (%+ld KiB for %zu more records)\n",
              rss_after_first, rss_end, kSeconds, rss_end - rss_after_first, (kSeconds - 1) * kPerSecond);
}

// This machine's own /dev/kmsg read to its end through the collector's source (a read(2) and the
// parse per record): what the flood's read costs on top of the above. Skipped when unreadable.
void MeasureLiveKmsg() {
  std::string error;
  auto source = rdmahd::OpenKmsg(error);
  if (!source) {
    std::printf("\n/dev/kmsg: not read (%s)\n", error.c_str());
    return;
  }
  rdmahd::KernelLogRecord record;
  std::size_t records = 0;
  const double start = CpuSeconds();
  for (;;) {
    const auto r = source->Next(record, error);
    if (r == rdmahd::KernelLogSource::Read::kNoMore || r == rdmahd::KernelLogSource::Read::kError) break;
    ++records;
  }
  const double cpu = CpuSeconds() - start;
  if (records == 0) return;
  std::printf("\n/dev/kmsg of this machine, read to its end: %zu records, %.2f us/record (read(2) and parse)\n",
              records, cpu * 1e6 / static_cast<double>(records));
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 500000;
  auto classifier = rdmahd::KernelEventClassifier::Create(rdmahd::BuiltinKernelEventRules());
  if (!classifier.ok()) {
    std::fprintf(stderr, "%s\n", classifier.error().message.c_str());
    return 1;
  }
  const std::string access_reg =
      "3,1042,11176517416,-;mlx5_core 0000:05:00.0: mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) op_mod(0x1) "
      "failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)\n SUBSYSTEM=pci\n DEVICE=+pci:0000:05:00.0\n";
  const std::vector<std::string> flood{access_reg};
  const std::vector<std::string> quiet{
      "6,1,18780940,-;IPv6: ADDRCONF(NETDEV_CHANGE): enp65s0f1: link becomes ready\n",
      "6,2,5376443,-;mlx5_core 0000:01:00.0: firmware version: 14.32.1010\n SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n",
      "6,3,204791086,-;mlx5_core 0000:41:00.0: E-Switch: Disable: mode(LEGACY), nvfs(0), necvfs(0), active vports(0)\n",
      "6,4,100,-;audit: type=1400 audit(1700000000.000:42): apparmor=\"STATUS\" operation=\"profile_load\" "
      "profile=\"unconfined\" name=\"/usr/bin/man\" pid=812 comm=\"apparmor_parser\"\n"};
  const std::vector<std::string> events{
      "4,5,51227747,-;mlx5_core 0000:41:00.1: temp_warn:170:(pid 0): High temperature on sensors with bit set 0 1\n",
      "3,6,131207015,-;mlx5_core 0000:41:00.0: poll_health:471:(pid 0): device's health compromised - reached miss count\n",
      "4,7,1,-;pcieport 0000:00:1d.0: AER: Multiple Corrected error received: 0000:03:00.0\n",
      "6,8,2,-;mlx5_core 0000:af:00.0 ens1f0np0: Link up\n"};
  const std::vector<std::string> worst{"6,9,3,-;" + std::string(rdmahd::kKernelLogMaxMessageBytes, 'x') + "\n",
                                       "6,10,4,-;" + std::string(rdmahd::kKernelLogMaxMessageBytes / 2, 'x') +
                                           " ACCESS_REG(0x805) failed, status" + std::string(400, 'y') + "\n"};
  std::printf("%-44s %14s %12s %18s %8s\n", "records", "records/cpu-s", "us/record", "CPU at 10,000/s", "events");
  const std::pair<const char*, const std::vector<std::string>*> mixes[] = {
      {"ACCESS_REG flood (all match command_failed)", &flood},
      {"ordinary lines (no rule matches)", &quiet},
      {"events (health, thermal, AER, link)", &events},
      {"1 KiB messages (the cap)", &worst}};
  for (const auto& [name, records] : mixes) {
    const Run run = Measure(*classifier, *records, n);
    // The event count shows the records were parsed and classified, not refused early.
    std::printf("%-44s %14.0f %12.2f %17.1f%% %7.0f%%\n", name, run.records_per_cpu_second,
                1e6 / run.records_per_cpu_second, 100.0 * 10000.0 / run.records_per_cpu_second,
                100.0 * static_cast<double>(run.events) / static_cast<double>(n));
  }
  MeasureCollector(access_reg.substr(access_reg.find(';') + 1));
  MeasureLiveKmsg();
  return 0;
}
