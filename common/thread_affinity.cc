#include "common/thread_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <string>
#include <vector>

namespace rdmahd {
namespace {

// A list as the kernel prints it, cut to a line's worth: a configured list may name thousands of
// CPUs one by one, and a message (a peer_latency reason, a log line) says which, not all of them.
std::string ListForMessage(const CpuList& cpus) {
  constexpr std::size_t kShown = 64;
  std::string text = cpus.ToString();
  if (text.size() <= kShown) return text;
  const std::size_t cut = text.rfind(',', kShown);
  return text.substr(0, cut == std::string::npos ? kShown : cut) + ",... (" + std::to_string(cpus.count()) + " CPUs)";
}

}  // namespace

CpuList CallingThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::vector<CpuRange> ranges;
  for (std::uint32_t cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) ranges.push_back({cpu, cpu});
  }
  return CpuList(std::move(ranges));
}

Status PinCallingThread(const CpuList& cpus) {
  if (cpus.empty()) return Error{"no CPU to pin to"};
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const CpuRange& r : cpus.ranges()) {
    if (r.first >= CPU_SETSIZE) break;
    for (std::uint32_t cpu = r.first; cpu <= r.last && cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &set);
  }
  if (CPU_COUNT(&set) == 0) {
    return Error{"cpus " + ListForMessage(cpus) + ": above the " + std::to_string(CPU_SETSIZE) + " CPUs a thread can be pinned to"};
  }
  if (const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0) {
    // EINVAL: none of them is online or allowed to this process (its cpuset, a container's limit).
    return Error::FromErrno(
        "pin to cpus " + ListForMessage(cpus) + " (allowed here: " + ListForMessage(CallingThreadCpus()) + ")", rc);
  }
  return Status::Ok();
}

bool ThreadPinning::Apply(const CpuList& cpus) {
  if (cpus == applied_) return false;
  applied_ = cpus;
  error_.clear();
  if (cpus.empty()) {
    if (!original_.empty()) (void)PinCallingThread(original_);
    return true;
  }
  if (Status st = PinCallingThread(cpus); !st.ok()) {
    error_ = st.error().message;
    if (!original_.empty()) (void)PinCallingThread(original_);  // not left on an older list
  }
  return true;
}

}  // namespace rdmahd
