// libFuzzer target: the peer targets file parser (ParseTargetsFile: yaml-cpp, groups, target and
// label validation) from bytes, as the probe reads the file. Invariants: every refusal names the
// file first; every accepted target is a valid target (an IP literal or a host name), listed once,
// and its labels are sorted, valid names, none reserved.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "common/net_address.h"
#include "probes/peer_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = rdmahd::ParseTargetsFile(text, "peers.yaml");
  if (!parsed.ok()) {
    if (parsed.error().message.rfind("peers.yaml", 0) != 0) __builtin_trap();
    return 0;
  }
  std::set<std::string> names;
  for (const auto& t : *parsed) {
    if (rdmahd::CheckPeerTarget(t.name).has_value()) __builtin_trap();
    if (!names.insert(t.name).second) __builtin_trap();
    for (std::size_t i = 0; i < t.labels.size(); ++i) {
      if (t.labels[i].first.empty() || t.labels[i].first == "peer") __builtin_trap();
      if (i > 0 && !(t.labels[i - 1].first < t.labels[i].first)) __builtin_trap();
    }
  }
  auto merged = rdmahd::MergeTargets({"10.0.0.1"}, *parsed);
  if (merged.size() != names.size() + (names.count("10.0.0.1") ? 0 : 1)) __builtin_trap();
  return 0;
}
