// Check: turns collected facts + policy into verdicts, each with a human reason and a remediation
// hint. Checks never read the node themselves; everything comes from the Snapshot (collector
// facts, the Topology, probe results) and, for checks that judge change across collections (a
// counter's growth, a port's flaps), the engine's History (core/history.h): such a check records
// the series it needs from each collection's facts (Record) and asks the history in
// EvaluateOverTime.
//
// Adding a check = one .cc file ending in RDMAHD_REGISTER_CHECK, its _test.cc, one line in
// CMakeLists.txt (RDMAHD_CHECK_SOURCES) and its section in docs/checks.md. Checks include fact
// headers (facts/, core/topology.h), never a collector's implementation. A check with settings
// registers its config section in the same file (RDMAHD_REGISTER_CONFIG_SECTION,
// config/config_section.h) and reads it as config.Section<Type>(); its keys go in
// docs/configuration.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/history.h"
#include "core/registry.h"
#include "core/snapshot.h"

namespace rdmahd {

enum class Verdict { kOk, kWarning, kFailed, kUnknown };

std::string_view VerdictName(Verdict v);  // "ok", "warning", "failed", "unknown"

struct CheckResult {
  std::string check;    // the check's registered name, e.g. "port_active" (filled in by RunCheck)
  std::string subject;  // what was checked, e.g. "mlx5_0/1" or "ens1f0"; "node" for node-wide
  Verdict verdict = Verdict::kUnknown;
  std::string reason;   // why, in words an operator understands, with the observed values
  std::string fix;      // what to do about it (a command where one exists); empty when ok
};

// What a check evaluates: this collection's facts, the policy, and the history of past collections
// (this one's samples included) as of `now`, the collection's time.
struct CheckContext {
  const Snapshot& snapshot;
  const Config& config;
  const History& history;
  History::TimePoint now;
  // Where a check may publish the facts it derived from the history (facts/*.h), for a collector
  // to render as metrics from the report; nullptr when nobody renders (tools, tests).
  Snapshot* derived = nullptr;
};

class Check {
 public:
  virtual ~Check() = default;
  // Appends one result per subject (leaving `check` empty). A check whose facts are missing
  // (collector disabled/failed) appends nothing or an "unknown" verdict saying why. Checks of one
  // collection's facts override this.
  virtual void Evaluate(const Snapshot& snapshot, const Config& config, std::vector<CheckResult>& out) const {
    (void)snapshot, (void)config, (void)out;
  }
  // Checks that ask the history override this instead (the default is Evaluate).
  virtual void EvaluateOverTime(const CheckContext& ctx, std::vector<CheckResult>& out) const {
    Evaluate(ctx.snapshot, ctx.config, out);
  }
  // Records into `history`, at `now`, the series EvaluateOverTime asks for, from the collection's
  // facts (never from the node). Called once per collection, right before this check evaluates;
  // a check names its series after itself ("roce_pause_storm/...") so that no two checks share one.
  virtual void Record(const Snapshot& snapshot, const Config& config, History& history,
                      History::TimePoint now) const {
    (void)snapshot, (void)config, (void)history, (void)now;
  }
};

// Every check linked into the binary.
Registry<Check>& CheckRegistry();

// Runs `check` (registered as `name`) and appends its results to `out` with `check` set to
// `name`. A check that throws costs its own verdicts only: they are replaced by one "unknown"
// saying why.
void RunCheck(const std::string& name, const Check& check, const CheckContext& ctx, std::vector<CheckResult>& out);
// As above, with an empty history (one collection's facts only).
void RunCheck(const std::string& name, const Check& check, const Snapshot& snapshot, const Config& config,
              std::vector<CheckResult>& out);
// One collection's turn of `check`: records its series into `history` at `now` (Check::Record),
// then runs it as above with that history, publishing into `derived` (may be null). A Record
// that throws costs the check's verdicts in the same way.
void RunCheck(const std::string& name, const Check& check, const Snapshot& snapshot, const Config& config,
              History& history, History::TimePoint now, std::vector<CheckResult>& out, Snapshot* derived = nullptr);
// The registered check `name`, instantiated and run (tests and tools). Empty when no such check.
std::vector<CheckResult> RunRegisteredCheck(std::string_view name, const Snapshot& snapshot, const Config& config);
std::vector<CheckResult> RunRegisteredCheck(std::string_view name, const CheckContext& ctx);

#define RDMAHD_REGISTER_CHECK(name, Type, description)                                   \
  [[maybe_unused]] static const bool rdmahd_check_registered_##Type =                    \
      ::rdmahd::internal::RegisterOrDie(::rdmahd::CheckRegistry(),                        \
                                        {name, description, [] { return std::make_unique<Type>(); }})

}  // namespace rdmahd
