// The "kernel_log" collector: the kernel's record stream (/dev/kmsg) read without blocking on every
// collection, each kernel record classified by parsers/kernel_event_rules into a NIC health event,
// mapped to an RDMA device by PCI address, RDMA device name or netdev (facts/kernel_log_facts.h).
//
// At start it reads from the oldest record the ring still holds, skipping those older than the
// look-back (`kernel_log.look_back`, 10 minutes by default), so a restarted daemon and `rdma-healthd check` see what just happened.
// After that each collection reads what is new: at most kMaxRecordsPerCollection records, and for
// at most the read budget (half the collection timeout, at most kMaxReadBudget): a flood of
// ACCESS_REG failures, 10,000 lines/s, costs bounded CPU and yields counts, not memory; the rest is
// read by the next collection, or lost to the ring, which the kernel says with EPIPE and is
// counted. Until a collection has read to the end (a large backlog at start, a flood faster than
// the cap), the facts say so (`caught_up` false) and nothing unread is judged: nic_health is
// unknown, or failed when a critical event was already read. Records from user space (facility
// other than 0) are not the kernel's: skipped.
// Test only: with RDMAHD_TEST_KMSG_USER_RECORDS=1 in the environment, facility 1 (LOG_USER, which the
// kernel gives every record written to /dev/kmsg from user space) is taken as the kernel's too, so
// the VM tier can send driver-format lines through the real record path (docs/vm-tests.md,
// vm_kernel_log_on_rxe). Nothing a real node runs sets it.
//
// Reading /dev/kmsg needs CAP_SYSLOG when kernel.dmesg_restrict=1 (the unit and the DaemonSet grant
// it); without it the facts say so and the nic_health check is unknown with the reason. On a
// captured tree (--path.sysfs not the live /sys) this node's log is not the capture's: not read,
// unless --path.kmsg names a saved one, which is then read instead (once, to its end: no look-back,
// no record cap, only the read budget per collection, and its last record's time stands for "now";
// a log not read to its end within one collection's budget is read on by the next ones, and is
// not judged until then).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/collector.h"
#include "facts/kernel_log_facts.h"
#include "parsers/kernel_event_rules.h"

namespace rdmahd {

// Kernel log records one at a time: /dev/kmsg's, or a saved log's.
class KernelLogSource {
 public:
  enum class Read { kRecord, kNotARecord, kNoMore, kLost, kError };
  virtual ~KernelLogSource() = default;
  // kRecord: `record` holds one record. kNotARecord: something was read that is no kernel record
  // (skipped). kNoMore: nothing new (EAGAIN; the end of a saved log). kLost: the ring overwrote
  // records not yet read (EPIPE; the next read goes on from the oldest one left). kError: `error`
  // says why (the source is then closed; the next collection opens it again).
  virtual Read Next(KernelLogRecord& record, std::string& error) = 0;
  // A saved log's own end: the last record's monotonic and wall-clock times, which stand for "now"
  // (a saved log is judged as of when it was saved). Both absent for the live stream.
  virtual std::optional<std::chrono::microseconds> end_monotonic() const { return std::nullopt; }
  virtual std::optional<std::int64_t> end_unix_seconds() const { return std::nullopt; }
  // A saved log's progress: bytes read so far and its size. Absent for the live stream.
  virtual std::optional<std::pair<std::uint64_t, std::uint64_t>> progress_bytes() const { return std::nullopt; }
};

// /dev/kmsg opened O_RDONLY|O_NONBLOCK; null with `error` set (ENOENT, EPERM, ...).
std::unique_ptr<KernelLogSource> OpenKmsg(std::string& error);

// A saved log (NodeFs::kernel_log(), --path.kmsg), read whole (at most kMaxSavedLogBytes), its
// format found from its first lines (parsers/kernel_log_record.h); null with `error` set.
inline constexpr std::size_t kMaxSavedLogBytes = 64u << 20;
std::unique_ptr<KernelLogSource> OpenSavedLog(const std::string& path, std::string& error);

// The `kernel_log` config section: the look-back at start, and a user's rules, run after the
// built-in ones (BuiltinKernelEventRules) on the same classifier.
struct KernelLogPolicy {
  std::chrono::milliseconds look_back = std::chrono::minutes(10);
  std::vector<KernelEventRule> rules;
};

struct KernelLogClock {
  std::function<std::chrono::microseconds()> monotonic;  // CLOCK_MONOTONIC: /dev/kmsg's time base
  std::function<std::int64_t()> unix_seconds;            // the wall clock
};

class KernelLogCollector : public Collector {
 public:
  static constexpr std::size_t kMaxRecordsPerCollection = 100000;  // the live stream's, per collection
  static constexpr std::chrono::milliseconds kMaxReadBudget{2000};
  static constexpr char kTestUserRecordsEnv[] = "RDMAHD_TEST_KMSG_USER_RECORDS";

  // Opens the log `fs` says to read (a saved log's path, or "" for /dev/kmsg).
  using SourceFactory = std::function<std::unique_ptr<KernelLogSource>(const std::string& saved, std::string& error)>;
  KernelLogCollector();
  // Tests: a fake source and clock.
  KernelLogCollector(SourceFactory open, KernelLogClock clock);

  Status Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) override;
  // Tests: the read budget per collection instead of half the collection timeout (at most
  // kMaxReadBudget); zero reads one record (then checks the clock).
  void SetReadBudgetForTest(std::chrono::milliseconds budget) { read_budget_for_test_ = budget; }
  void Render(const Snapshot& snapshot, MetricSink& sink) const override;

 private:
  struct DeviceState {
    std::map<std::pair<std::string, std::string>, KernelEventCount> counts;  // one per rule and severity
    std::vector<KernelEvent> recent;  // warning and critical, at most kRecentPerDevice, oldest first
  };
  void Take(const KernelLogRecord& record, const Topology& topology, std::int64_t now_unix,
            std::chrono::microseconds now_mono);

  SourceFactory open_;
  KernelLogClock clock_;
  // Built from the built-in rules and the config's (rebuilt when the config's change; the loader
  // has compiled them already, so a failure here is a bug, reported as the collector's error).
  Status UseRules(const std::vector<KernelEventRule>& user_rules);

  std::optional<KernelEventClassifier> classifier_;
  std::vector<KernelEventRule> user_rules_;  // the config's rules classifier_ was built with
  std::string classifier_error_;
  std::unique_ptr<KernelLogSource> source_;
  bool started_ = false;                 // the first read (with the look-back) happened
  bool saved_read_ = false;              // a saved log was read to its end (it is not read again)
  std::chrono::microseconds oldest_mono_{};  // records older than this are before the look-back
  std::map<std::string, DeviceState> devices_;  // by RDMA device
  std::uint64_t records_ = 0, overruns_ = 0, unmatched_ = 0;
  std::uint64_t order_ = 0;   // events taken: each event's place in the log
  bool caught_up_ = false;    // the last collection read to the end of what there was
  std::optional<std::chrono::milliseconds> read_budget_for_test_;
};

}  // namespace rdmahd
