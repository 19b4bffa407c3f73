// libFuzzer target: the host memory parsers (parsers/host_memory_parse.h,
// parsers/proc_pid_parse.h, common/cpulist.h) on the same bytes, as the collectors feed them a
// file's text. Besides "no crash": a cpulist that parses prints back to a list that parses to the
// same set, and whatever is parsed stays within the bounds the parsers promise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/cpulist.h"
#include "parsers/host_memory_parse.h"
#include "parsers/proc_pid_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace rdmahd;

  if (Result<CpuList> cpus = ParseCpuList(text); cpus.ok()) {
    Result<CpuList> again = ParseCpuList(cpus->ToString());
    if (!again.ok() || !(*again == *cpus)) __builtin_trap();
    if (cpus->CountIn(*cpus) != cpus->count()) __builtin_trap();
    for (const CpuRange& r : cpus->ranges()) {
      if (r.first > r.last || r.last > CpuList::kMaxId) __builtin_trap();
    }
  }
  (void)ParseMeminfoHugepages(text);
  if (auto nodes = ParseNodeMeminfoHugepages(text); nodes.ok()) {
    for (const auto& [node, pool] : *nodes) {
      if (node < 0 || node > 65535 || pool.reserved) __builtin_trap();
    }
  }
  if (auto page = ParseHugepageDirName(text); page && (*page == 0 || *page % 1024 != 0)) __builtin_trap();
  (void)ParseHugepageCount(text);
  if (auto mode = ParseThpMode(text); mode.ok() && (mode->empty() || mode->size() > 16)) __builtin_trap();
  (void)ParseNumaBalancing(text);
  (void)ParseMemlockLimit(text);
  (void)ParseProcStatus(text);
  (void)ParseNumaMapsBytesByNode(text, 4096);
  return 0;
}
