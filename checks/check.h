// Check: turns collected facts + policy into verdicts, each with a human reason and a remediation
// hint. Checks never read the node themselves; everything comes from the Snapshot.
//
// Adding a check = one .cc with RDMAHD_REGISTER_CHECK, its _test.cc, one line in CMakeLists.txt and
// its entry in docs/checks.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/snapshot.h"
#include "config/config.h"

namespace rdmahd {

enum class Verdict { kOk, kWarning, kFailed, kUnknown };

std::string_view VerdictName(Verdict v);  // "ok", "warning", "failed", "unknown"

struct CheckResult {
  std::string check;    // check name, e.g. "port_active"
  std::string subject;  // what was checked, e.g. "mlx5_0/1" or "ens1f0"; "node" for node-wide
  Verdict verdict = Verdict::kUnknown;
  std::string reason;   // why, in words an operator understands, with the observed values
  std::string fix;      // what to do about it (a command where one exists); empty when ok
};

class Check {
 public:
  virtual ~Check() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  // Appends one result per subject. A check whose facts are missing (collector disabled/failed)
  // appends nothing or an "unknown" verdict saying why.
  virtual void Evaluate(const Snapshot& snapshot, const Config& config,
                        std::vector<CheckResult>& out) const = 0;
};

using CheckFactory = std::function<std::unique_ptr<Check>()>;

struct CheckRegistration {
  std::string name;
  CheckFactory factory;
};

const std::vector<CheckRegistration>& RegisteredChecks();

namespace internal {
bool RegisterCheck(std::string name, CheckFactory factory);
}  // namespace internal

#define RDMAHD_REGISTER_CHECK(name, Type)                                  \
  [[maybe_unused]] static const bool rdmahd_check_registered_##Type =     \
      ::rdmahd::internal::RegisterCheck(name, [] { return std::make_unique<Type>(); })

}  // namespace rdmahd
