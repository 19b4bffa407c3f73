// libFuzzer target: the config loader from bytes (ParseConfig: the size cap, the flow pre-scan,
// yaml-cpp, schema validation, RE2 pattern compilation), the same path as LoadConfigFile after the
// read. A config that loads is then used the way the collectors use it: its device filter and
// ethtool allowlist patterns (the `roce` section, registered by checks/roce_checks.cc, linked in)
// are matched against names taken from the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/excerpt.h"
#include "common/pattern.h"
#include "common/utf8.h"
#include "config/config.h"
#include "config/policies.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The collectors registered in the daemon (collectors/*.cc RDMAHD_REGISTER_COLLECTOR); fixed
  // here so the target does not link every collector.
  static const std::vector<std::string> kCollectors = {"devices", "netdev", "roce", "verbs"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  rdmahd::Result<rdmahd::Config> config = rdmahd::ParseConfig(text, "fuzz.yaml", kCollectors);
  if (!config.ok()) {
    // Every refusal names its source first ("fuzz.yaml:LINE:COL: ..." or "fuzz.yaml: ...").
    if (config.error().message.rfind("fuzz.yaml", 0) != 0) __builtin_trap();
    // Capped and printable whatever the input (a 1 MB key must not give a 1 MB message).
    if (config.error().message.size() > rdmahd::kMaxMessageBytes) __builtin_trap();
    if (!rdmahd::IsValidUtf8(config.error().message)) __builtin_trap();
    return 0;
  }
  const std::string name = text.substr(0, 64);
  (void)config->devices.Matches(name);
  (void)config->devices.Matches("mlx5_0");
  for (const auto& p : config->Section<rdmahd::RocePolicy>().extra_ethtool_stats) {
    rdmahd::Result<rdmahd::Pattern> compiled = rdmahd::Pattern::Compile(p);
    if (!compiled.ok()) __builtin_trap();  // the loader accepted it, so it must compile
    (void)compiled->FullMatch(name);
  }
  return 0;
}
