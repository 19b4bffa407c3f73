#include "collectors/kernel_log.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "config/config_section.h"

namespace rdmahd {
namespace {

class KmsgSource : public KernelLogSource {
 public:
  explicit KmsgSource(int fd) : fd_(fd) {}
  ~KmsgSource() override { ::close(fd_); }
  KmsgSource(const KmsgSource&) = delete;
  KmsgSource& operator=(const KmsgSource&) = delete;

  Read Next(KernelLogRecord& record, std::string& error) override {
    // One read() is one record; a buffer smaller than the record is EINVAL, so take the kernel's cap.
    buf_.resize(kKernelLogMaxRecordBytes + 1);
    for (;;) {
      const ssize_t n = ::read(fd_, buf_.data(), buf_.size());
      if (n > 0) {
        Result<KernelLogRecord> r = ParseKmsgRecord(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
        if (!r.ok()) return Read::kNotARecord;
        record = std::move(*r);
        return Read::kRecord;
      }
      if (n == 0) return Read::kNoMore;
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return Read::kNoMore;
      if (errno == EPIPE) return Read::kLost;
      error = std::string("read: ") + std::strerror(errno);
      return Read::kError;
    }
  }

 private:
  int fd_;
  std::string buf_;
};

class SavedLogSource : public KernelLogSource {
 public:
  explicit SavedLogSource(std::string text) : text_(std::move(text)) {
    format_ = DetectSavedLogFormat(std::string_view(text_).substr(0, 64 << 10));
    // The log's end stands for "now": the times of the last record that has any, found from the
    // end (one format per file, so a record with a time has every kind of time the file has).
    std::string_view before = text_;
    while (!before.empty() && !end_mono_ && !end_unix_) {
      if (before.back() == '\n') before.remove_suffix(1);
      const std::size_t nl = before.rfind('\n');
      const std::string_view line = nl == std::string_view::npos ? before : before.substr(nl + 1);
      before = nl == std::string_view::npos ? std::string_view{} : before.substr(0, nl);
      if (auto r = ParseSavedLogLine(line, format_)) {
        if (r->monotonic_us) end_mono_ = std::chrono::microseconds(static_cast<std::int64_t>(*r->monotonic_us));
        end_unix_ = r->realtime_s;
      }
    }
    rest_ = text_;
  }

  Read Next(KernelLogRecord& record, std::string&) override {
    while (!rest_.empty()) {
      const std::string_view line = NextLine(rest_);
      std::optional<KernelLogRecord> r = ParseSavedLogLine(line, format_);
      if (!r) continue;
      // A copy of /dev/kmsg: the record's " KEY=VALUE" lines follow it.
      while (format_ == SavedLogFormat::kKmsg && !rest_.empty() && rest_.front() == ' ') {
        AddKmsgDictLine(NextLine(rest_), *r);
      }
      record = std::move(*r);
      return Read::kRecord;
    }
    return Read::kNoMore;
  }
  std::optional<std::chrono::microseconds> end_monotonic() const override { return end_mono_; }
  std::optional<std::int64_t> end_unix_seconds() const override { return end_unix_; }
  std::optional<std::pair<std::uint64_t, std::uint64_t>> progress_bytes() const override {
    return std::make_pair(static_cast<std::uint64_t>(text_.size() - rest_.size()),
                          static_cast<std::uint64_t>(text_.size()));
  }

 private:
  static std::string_view NextLine(std::string_view& rest) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    return line;
  }

  std::string text_;
  std::string_view rest_;
  SavedLogFormat format_ = SavedLogFormat::kPlain;
  std::optional<std::chrono::microseconds> end_mono_;
  std::optional<std::int64_t> end_unix_;
};

std::chrono::microseconds MonotonicNow() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::microseconds(ts.tv_nsec / 1000);
}

std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The RDMA device an event is about: by name, else by PCI address, else by netdev; "" when none.
std::string DeviceOf(const KernelEvent& e, const Topology& topology) {
  for (const TopologyDevice& d : topology.devices) {
    if (!e.ib_device.empty() && d.name == e.ib_device) return d.name;
  }
  for (const TopologyDevice& d : topology.devices) {
    if (!e.pci_address.empty() && d.pci_address == e.pci_address) return d.name;
  }
  for (const TopologyDevice& d : topology.devices) {
    for (const TopologyPort& p : d.ports) {
      if (!e.netdev.empty() && p.netdev == e.netdev) return d.name;
    }
  }
  return "";
}

}  // namespace

std::unique_ptr<KernelLogSource> OpenKmsg(std::string& error) {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    error = std::strerror(err);
    if (err == EPERM || err == EACCES)
      error += " (reading the kernel log needs CAP_SYSLOG while kernel.dmesg_restrict=1)";
    return nullptr;
  }
  return std::make_unique<KmsgSource>(fd);
}

std::unique_ptr<KernelLogSource> OpenSavedLog(const std::string& path, std::string& error) {
  Result<std::string> text = ReadRegularFile(path, kMaxSavedLogBytes);
  if (!text.ok()) {
    error = text.error().message;
    return nullptr;
  }
  return std::make_unique<SavedLogSource>(std::move(*text));
}

KernelLogCollector::KernelLogCollector()
    : KernelLogCollector(
          [](const std::string& saved, std::string& error) {
            return saved.empty() ? OpenKmsg(error) : OpenSavedLog(saved, error);
          },
          KernelLogClock{MonotonicNow, UnixNow}) {}

KernelLogCollector::KernelLogCollector(SourceFactory open, KernelLogClock clock)
    : open_(std::move(open)), clock_(std::move(clock)) {
  (void)UseRules({});
}

Status KernelLogCollector::UseRules(const std::vector<KernelEventRule>& user_rules) {
  if (classifier_ && user_rules == user_rules_) return Status::Ok();
  std::vector<KernelEventRule> rules = BuiltinKernelEventRules();
  rules.insert(rules.end(), user_rules.begin(), user_rules.end());
  Result<KernelEventClassifier> c = KernelEventClassifier::Create(std::move(rules));
  if (!c.ok()) {
    classifier_.reset();
    classifier_error_ = c.error().message;
    return Error{"kernel event rules: " + classifier_error_, EINVAL};
  }
  classifier_.emplace(std::move(*c));
  user_rules_ = user_rules;
  return Status::Ok();
}

void KernelLogCollector::Take(const KernelLogRecord& record, const Topology& topology, std::int64_t now_unix,
                              std::chrono::microseconds now_mono) {
  std::optional<KernelEvent> event = classifier_->Classify(record);
  if (!event) return;
  const std::string device = DeviceOf(*event, topology);
  if (device.empty()) {
    ++unmatched_;
    return;
  }
  // The record's time on the wall clock: /dev/kmsg stamps it on the monotonic clock.
  if (!event->realtime_s) event->realtime_s = now_unix;
  if (record.monotonic_us && !record.realtime_s && static_cast<std::int64_t>(*record.monotonic_us) <= now_mono.count())
    event->realtime_s =
        now_unix - (now_mono.count() - static_cast<std::int64_t>(*record.monotonic_us) + 500000) / 1000000;
  DeviceState& state = devices_[device];
  KernelEventCount& count = state.counts[{event->name, std::string(KernelEventSeverityName(event->severity))}];
  ++count.count;
  count.last_seen_unix_s = *event->realtime_s;
  // A run ends when the kind was quiet for a whole window: what came before is past judging.
  const std::uint64_t order = ++order_;
  if (count.run_count == 0 || !count.last.realtime_s ||
      *event->realtime_s - *count.last.realtime_s > KernelLogFacts::kWindowSeconds) {
    count.run_count = 0;
    count.first = *event;
    count.first_order = order;
  }
  ++count.run_count;
  count.last = *event;
  count.last_order = order;
  // Info events (thousands of refused commands a minute on a restricted PF) are only counted: they
  // never push a warning or a critical event out of the recent list.
  if (event->severity == KernelEventSeverity::kInfo) return;
  if (state.recent.size() == KernelLogFacts::kRecentPerDevice) state.recent.erase(state.recent.begin());
  state.recent.push_back(std::move(*event));
}

Status KernelLogCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& outcome) {
  KernelLogFacts facts;
  const std::string& saved = ctx.fs.kernel_log();
  facts.source = saved.empty() ? "/dev/kmsg" : saved;
  if (saved.empty() && !ctx.fs.asks_kernel()) {
    facts.unreadable = "the tree under --path.sysfs is a capture, and this node's kernel log is not its "
                       "(--path.kmsg reads a saved one)";
    snapshot.Put(std::move(facts));
    return Status::Ok();
  }
  const KernelLogPolicy& policy = ctx.config.Section<KernelLogPolicy>();
  if (Status s = UseRules(policy.rules); !s.ok()) return s;
  if (!source_ && !saved_read_) {  // a saved log, once read to its end, is not opened again
    std::string error;
    source_ = open_(saved, error);
    if (!source_) {
      facts.unreadable = facts.source + ": " + error;
      snapshot.Put(std::move(facts));
      return Status::Ok();
    }
  }
  // A saved log is judged as of its last record; the live stream as of now.
  std::chrono::microseconds now_mono = clock_.monotonic();
  std::int64_t now_unix = clock_.unix_seconds();
  if (source_) {
    if (auto end = source_->end_monotonic()) now_mono = *end;
    if (auto end = source_->end_unix_seconds()) now_unix = *end;
  }
  if (!started_) {
    started_ = true;
    // The look-back bounds what a start takes from the live ring; a saved log is read whole.
    const auto look_back = saved.empty() ? std::chrono::duration_cast<std::chrono::microseconds>(policy.look_back)
                                         : now_mono;
    oldest_mono_ = now_mono - look_back;
  }
  // Test only (the header): user space's records (facility 1) taken as the kernel's.
  const char* test_user = std::getenv(kTestUserRecordsEnv);
  const std::uint32_t max_facility = test_user != nullptr && std::string_view(test_user) == "1" ? 1 : 0;
  // Bounded per collection: the live stream by a record cap and the clock, a saved log (already in
  // memory, at most kMaxSavedLogBytes) by the clock only, so that a file is read to its end.
  const auto budget = read_budget_for_test_.value_or(
      std::min<std::chrono::milliseconds>(kMaxReadBudget, ctx.config.collection_timeout / 2));
  const auto read_until = std::chrono::steady_clock::now() + budget;
  const std::size_t max_records = saved.empty() ? kMaxRecordsPerCollection : SIZE_MAX;
  KernelLogRecord record;
  std::string error;
  bool at_end = source_ == nullptr;  // a saved log read to its end earlier
  std::size_t i = 0;
  for (; source_ && i < max_records; ++i) {
    if (i % 1024 == 1 && std::chrono::steady_clock::now() >= read_until) break;
    const KernelLogSource::Read r = source_->Next(record, error);
    if (r == KernelLogSource::Read::kNoMore) {
      at_end = true;
      if (!saved.empty()) {  // read whole: done with it
        saved_read_ = true;
        source_.reset();
      }
      break;
    }
    if (r == KernelLogSource::Read::kLost) {
      ++overruns_;
      continue;
    }
    if (r == KernelLogSource::Read::kError) {
      outcome.errors.push_back(facts.source + ": " + error + " (opened again on the next collection)");
      source_.reset();
      break;
    }
    ++records_;
    if (r == KernelLogSource::Read::kNotARecord) continue;  // not what the kernel writes: nothing to learn
    if (record.facility.value_or(0) > max_facility) continue;  // written by user space, not the kernel
    if (record.monotonic_us && static_cast<std::int64_t>(*record.monotonic_us) < oldest_mono_.count()) continue;
    FillDeviceFromMessage(record);
    Take(record, ctx.topology, now_unix, now_mono);
  }
  caught_up_ = at_end;
  facts.readable = true;
  facts.caught_up = caught_up_;
  if (source_) {
    if (auto p = source_->progress_bytes()) {
      facts.bytes_read = p->first;
      facts.bytes_total = p->second;
    }
  }
  facts.now_unix_s = now_unix;
  facts.records = records_;
  facts.overruns = overruns_;
  facts.unmatched_events = unmatched_;
  for (const auto& [name, state] : devices_) facts.devices.push_back({name, state.counts, state.recent});
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void KernelLogCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const KernelLogFacts* facts = snapshot.Get<KernelLogFacts>();
  if (facts == nullptr) return;
  auto readable = sink.Gauge("rdma_kernel_log_readable",
                             "1 when the daemon reads the kernel log (/dev/kmsg), 0 when it cannot (the check "
                             "nic_health says why).");
  readable.Add({}, facts->readable ? 1 : 0);
  if (!facts->readable) return;
  auto events = sink.Counter("rdma_kernel_events_total",
                             "NIC health events the kernel logged about an RDMA device, by event and severity, since "
                             "the daemon started (and those of the kernel_log.look_back before it).");
  auto last = sink.Gauge("rdma_kernel_event_last_seen_timestamp_seconds",
                         "Unix time of the last such event.");
  for (const KernelLogDeviceFacts& d : facts->devices) {
    for (const auto& [key, count] : d.counts) {
      const std::vector<Label> labels{{"device", d.device}, {"event", key.first}, {"severity", key.second}};
      events.Add(labels, static_cast<double>(count.count));
      last.Add(labels, static_cast<double>(count.last_seen_unix_s));
    }
  }
  sink.Counter("rdma_kernel_log_records_total", "Kernel log records the daemon read.")
      .Add({}, static_cast<double>(facts->records));
  sink.Counter("rdma_kernel_log_overruns_total",
               "Times the kernel's log ring overwrote records before the daemon read them (EPIPE).")
      .Add({}, static_cast<double>(facts->overruns));
}

RDMAHD_REGISTER_COLLECTOR("kernel_log", KernelLogCollector,
                          "NIC health events from the kernel log (/dev/kmsg): firmware health, thermal, module, "
                          "command failures, PCIe AER");

namespace {
constexpr std::size_t kMaxUserRules =
    KernelEventClassifier::kMaxRules > 64 ? 64 : KernelEventClassifier::kMaxRules;  // beside the built-in ones
}  // namespace

RDMAHD_REGISTER_CONFIG_SECTION(KernelLogPolicy, "kernel_log", 70,
    {{"kernel_log.look_back", "`10m`"},
     {"kernel_log.rules[i].name", "required"},
     {"kernel_log.rules[i].pattern", "required"},
     {"kernel_log.rules[i].severity", "`warning`"}},
    [](const ConfigWalker& w, const ConfigNode& v, KernelLogPolicy& out) {
      return w.VisitMap(v, {
          {"look_back",
           [&](const ConfigNode& f) {
             return w.ReadDuration(f, std::chrono::seconds(0), std::chrono::hours(24), out.look_back);
           }},
          {"rules", [&](const ConfigNode& list) {
             out.rules.clear();
             std::vector<int> lines;  // each rule's line, for "already used" messages
             return w.VisitList(list, "a list of rules (- name: ..., pattern: ..., severity: ...)",
                                [&](const ConfigNode& item) {
               if (!item.node.IsMap()) {
                 return w.FailAt(item, "must be a rule (name, pattern, severity), got " +
                                           ConfigWalker::Describe(item.node));
               }
               if (out.rules.size() == kMaxUserRules) {
                 return w.FailAt(item, "at most " + std::to_string(kMaxUserRules) + " rules");
               }
               KernelEventRule rule;
               std::optional<ConfigNode> pattern_node, name_node;
               Status st = w.VisitMap(item, {
                   {"name", [&](const ConfigNode& f) { name_node = f; return w.ReadString(f, rule.name); }},
                   {"pattern", [&](const ConfigNode& f) { pattern_node = f; return w.ReadString(f, rule.pattern); }},
                   {"severity",
                    [&](const ConfigNode& f) {
                      std::string s;
                      if (Status r = w.ReadString(f, s); !r.ok()) return r;
                      if (s == "info") rule.severity = KernelEventSeverity::kInfo;
                      else if (s == "warning") rule.severity = KernelEventSeverity::kWarning;
                      else if (s == "critical") rule.severity = KernelEventSeverity::kCritical;
                      else return w.FailAt(f, "must be info, warning or critical, got " + ConfigWalker::Quote(s));
                      return Status::Ok();
                    }},
               });
               if (!st.ok()) return st;
               if (!name_node) return w.FailAt(item, "a rule needs a name (the event's name: a-z 0-9 _)");
               if (!pattern_node) return w.FailAt(item, "a rule needs a pattern (RE2, matched anywhere in the message)");
               KernelEventRule name_only{.name = rule.name, .pattern = "x"};
               if (Status r = KernelEventClassifier::CheckRule(name_only); !r.ok()) {
                 return w.FailAt(*name_node, r.error().message);
               }
               for (const KernelEventRule& builtin : BuiltinKernelEventRules()) {
                 if (builtin.name == rule.name) {
                   return w.FailAt(*name_node, "is a built-in event's name: pick another (built-in rules cannot be replaced)");
                 }
               }
               for (std::size_t i = 0; i < out.rules.size(); ++i) {
                 if (out.rules[i].name == rule.name) {
                   return w.FailAt(*name_node, "is already the name of the rule on line " + std::to_string(lines[i] + 1));
                 }
               }
               if (Status r = KernelEventClassifier::CheckRule(rule); !r.ok()) return w.FailAt(*pattern_node, r.error().message);
               out.rules.push_back(std::move(rule));
               lines.push_back(item.mark.line);
               return Status::Ok();
             });
           }},
      });
    });

}  // namespace rdmahd
