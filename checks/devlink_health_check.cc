// devlink_health: the devlink health reporters of each RDMA device's PCI function
// (facts/devlink_health_facts.h), over the engine's history. `failed` when a reporter is in error
// state, or its error count rose within the last 24 h (the same sticky window as nic_health: long
// enough for an alert to fire and a person to look); `ok` when every reporter is healthy and none
// counted an error in that window. With one collection only (`rdma-healthd check`) no increase is
// known: errors counted since the driver registered the reporter are `failed` when its last dump
// (taken at the error, with auto dump on) is within the window, else a `warning` that says a
// second collection is needed. `unknown` when the reporters were not read (a capture, no devlink
// in the kernel) or the driver registers none for the function.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "core/check.h"
#include "facts/devlink_health_facts.h"

namespace rdmahd {
namespace {

constexpr auto kWindow = std::chrono::hours(24);

std::string Handle(const DevlinkHealthDeviceFacts& d) { return "pci/" + d.pci_address.value_or("?"); }

std::string Name(const DevlinkHealthReporter& r) {
  return r.port_index ? r.name + " (port " + std::to_string(*r.port_index) + ")" : r.name;
}

std::string Series(const DevlinkHealthDeviceFacts& d, const DevlinkHealthReporter& r) {
  return "devlink_health/" + d.device + "/" + r.name + "/" + (r.port_index ? std::to_string(*r.port_index) : "-");
}

std::string Counts(const DevlinkHealthReporter& r) {
  return std::to_string(r.error_count) + " errors, " + std::to_string(r.recover_count) + " recovered";
}

std::string Fix(const DevlinkHealthDeviceFacts& d, const DevlinkHealthReporter& r) {
  const std::string h = Handle(d);
  std::string target = h;  // "pci/0000:af:00.0" or, for a port's reporter, "pci/0000:af:00.0/1"
  if (r.port_index) target.append("/").append(std::to_string(*r.port_index));
  target.append(" reporter ").append(r.name);
  return "`devlink health show " + target + "` and `devlink health diagnose " + target +
         "` (and `devlink health dump show " + target + "` when a dump exists); if it stays in error, "
         "`devlink health recover " + target + "`, a firmware reset (`devlink dev reload " + h +
         "`) or a reboot; update the firmware, and RMA the NIC if it repeats";
}

class DevlinkHealthCheck : public Check {
 public:
  void Record(const Snapshot& snapshot, const Config&, History& history, History::TimePoint now) const override {
    const auto* facts = snapshot.Get<DevlinkHealthFacts>();
    if (facts == nullptr) return;
    for (const DevlinkHealthDeviceFacts& d : facts->devices) {
      // Another PCI function under the same device name counts anew.
      const std::uint64_t instance = std::hash<std::string>{}(d.pci_address.value_or(""));
      for (const DevlinkHealthReporter& r : d.reporters) history.RecordCounter(Series(d, r), instance, r.error_count, now);
    }
  }

  void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const override {
    const auto* facts = ctx.snapshot.Get<DevlinkHealthFacts>();
    if (facts == nullptr) return;
    // Dumps after this (wall clock, ns since the epoch) are within the window; 0 without a clock.
    const auto taken_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(ctx.snapshot.taken_at.time_since_epoch());
    const std::uint64_t recent_after =
        taken_ns.count() > 0 ? static_cast<std::uint64_t>(std::max<std::int64_t>(
                                   0, (taken_ns - std::chrono::duration_cast<std::chrono::nanoseconds>(kWindow)).count()))
                             : 0;
    for (const DevlinkHealthDeviceFacts& d : facts->devices) {
      CheckResult r{"", d.device, Verdict::kUnknown, "", ""};
      if (!d.read) {
        r.reason = d.note;
        out.push_back(std::move(r));
        continue;
      }
      if (d.reporters.empty()) {
        r.reason = "the driver registers no devlink health reporter for " + Handle(d) + " (`devlink health show " +
                   Handle(d) + "` lists none)";
        out.push_back(std::move(r));
        continue;
      }
      const DevlinkHealthReporter* in_error = nullptr;
      const DevlinkHealthReporter* rose = nullptr;
      std::uint64_t rose_by = 0;
      const DevlinkHealthReporter* old_errors = nullptr;  // one collection: errors of unknown age
      bool recent_dump = false;
      for (const DevlinkHealthReporter& rep : d.reporters) {
        if (rep.state == DevlinkHealthState::kError && in_error == nullptr) in_error = &rep;
        const auto growth = ctx.history.Increase(Series(d, rep), kWindow, ctx.now);
        if (growth) {
          if (growth->increase > 0 && rose == nullptr) {
            rose = &rep;
            rose_by = growth->increase;
          }
        } else if (rep.error_count > 0) {
          const bool recent = recent_after > 0 && rep.last_dump_realtime_ns && *rep.last_dump_realtime_ns > recent_after;
          if (old_errors == nullptr || (recent && !recent_dump)) {
            old_errors = &rep;
            recent_dump = recent;
          }
        }
      }
      if (in_error != nullptr) {
        r.verdict = Verdict::kFailed;
        r.reason = "devlink health reporter " + Name(*in_error) + " of " + Handle(d) + " is in error state (" +
                   Counts(*in_error) + "): the driver has not recovered from it";
        r.fix = Fix(d, *in_error);
      } else if (rose != nullptr) {
        r.verdict = Verdict::kFailed;
        r.reason = "devlink health reporter " + Name(*rose) + " of " + Handle(d) + " counted " + std::to_string(rose_by) +
                   " error(s) in the last 24 h (" + Counts(*rose) + "; healthy now)";
        r.fix = Fix(d, *rose);
      } else if (old_errors != nullptr && recent_dump) {
        r.verdict = Verdict::kFailed;
        r.reason = "devlink health reporter " + Name(*old_errors) + " of " + Handle(d) +
                   " dumped within the last 24 h (" + Counts(*old_errors) + "; healthy now)";
        r.fix = Fix(d, *old_errors);
      } else if (old_errors != nullptr) {
        r.verdict = Verdict::kWarning;
        r.reason = "devlink health reporter " + Name(*old_errors) + " of " + Handle(d) + " has " +
                   Counts(*old_errors) + " since the driver registered it (healthy now); whether they are recent "
                   "needs a second collection";
        r.fix = Fix(d, *old_errors);
      } else {
        r.verdict = Verdict::kOk;
        std::string names;
        for (const DevlinkHealthReporter& rep : d.reporters) names += (names.empty() ? "" : ", ") + Name(rep);
        r.reason = "every devlink health reporter of " + Handle(d) + " is healthy with no error in the last 24 h (" +
                   names + ")";
      }
      out.push_back(std::move(r));
    }
  }
};

}  // namespace

RDMAHD_REGISTER_CHECK("devlink_health", DevlinkHealthCheck,
                      "every devlink health reporter of the NIC is healthy and counted no error in 24 h");

}  // namespace rdmahd
