// How many kernel log records a second the kernel log decoders can take: each record parsed as
// /dev/kmsg hands it over and classified by the built-in rules. The mix is a flood (the ACCESS_REG
// failures a restricted PF logs on every counter read), ordinary lines no rule matches, and the
// events the rules exist for; plus the worst case, records at the message cap.
// Usage: rdmahd_kernel_log_bench [records]   (default 500000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

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
  return 0;
}
