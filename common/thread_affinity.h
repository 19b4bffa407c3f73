// Which CPUs a thread runs on. The peer probe's thread and the responder's session threads can be
// pinned (peers.cpus, peers.responder.cpus): a ping-pong whose two ends, or one end and a busy
// thread, share a CPU measures the scheduler, not the fabric (docs/performance.md, "Peer probes:
// accuracy against perftest").
#pragma once

#include <string>

#include "common/cpulist.h"
#include "common/result.h"

namespace rdmahd {

// The CPUs the calling thread may run on (sched_getaffinity); empty when it cannot be read.
CpuList CallingThreadCpus();

// Restricts the calling thread to `cpus`. An error names the list and the kernel's reason, e.g.
// when none of them is online or in the process's cpuset. An empty list is refused.
Status PinCallingThread(const CpuList& cpus);

// Pins the calling thread to a configured list, or gives it back the CPUs it had at construction
// when the list is empty. For a long-lived thread whose config can change (the probe thread, the
// responder's listener): it calls Apply at every round, which acts only when the list changed.
class ThreadPinning {
 public:
  ThreadPinning() : original_(CallingThreadCpus()) {}
  // True when `cpus` differs from the last list (and was applied now). A list that cannot be
  // applied leaves the thread on its original CPUs, and error() says why until the list changes.
  bool Apply(const CpuList& cpus);
  const std::string& error() const { return error_; }

 private:
  CpuList original_;
  CpuList applied_;
  std::string error_;
};

}  // namespace rdmahd
