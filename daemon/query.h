// Query arguments of the status page and the JSON API (docs/api.md, "Filters and paging"): which
// names a route takes, the verdict filter they make, and which verdicts belong to a device. A bad
// argument is an Error whose message names the parameter (QuotedArgument: never the raw bytes),
// answered 400 by the daemon.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/collection_engine.h"
#include "daemon/http_server.h"

namespace rdmahd {

// `s` fit to be named in an answer of any type: at most 64 bytes of it (then "..."), each byte
// outside printable ASCII and each of " & ' < > \ written \xNN, in double quotes. Nothing in it can
// open a tag, leave an attribute or a JSON string, or reach a terminal as a control.
std::string QuotedArgument(std::string_view s);

// The arguments by name when each name is one of `allowed` and none is given twice; else an Error
// naming the parameter ("unknown parameter \"x\" (this page takes: status, check)").
Result<std::map<std::string, std::string>> QueryArguments(const std::vector<QueryArgument>& query,
                                                          const std::vector<std::string_view>& allowed);

// Which verdicts an answer shows. Empty fields select everything.
struct VerdictFilter {
  std::set<Verdict> statuses;  // empty: every status
  std::string device;          // the device, its ports ("mlx5_0/1") and the netdevs behind them
  std::string check;
  std::size_t offset = 0;                // paging: the first `offset` matches are skipped
  std::optional<std::size_t> limit;      // at most this many after them; nullopt: all

  // Whether anything is selected or paged (an unfiltered answer is the cached document).
  bool Any() const { return !statuses.empty() || !device.empty() || !check.empty() || offset > 0 || limit; }
};

// The filter `args` (QueryArguments) give: status=failed,warning (a comma-separated list of
// failed, warning, unknown, ok), device=NAME, check=NAME, offset=N, limit=N (1..max_limit). Names
// not among these are left to the caller. An Error names the parameter.
Result<VerdictFilter> ParseVerdictFilter(const std::map<std::string, std::string>& args, std::size_t max_limit);

// A non-negative decimal of at most 9 digits, or an Error naming `name`.
Result<std::size_t> ParseCount(std::string_view name, std::string_view value);

// Subjects that belong to one device: the device itself, its ports ("mlx5_0/1") and the netdevs
// the topology puts behind them.
class DeviceSubjects {
 public:
  DeviceSubjects(const Report& report, std::string device);
  // Whether the topology has the device.
  bool exists() const { return exists_; }
  bool Has(std::string_view subject) const;
  const std::set<std::string, std::less<>>& netdevs() const { return netdevs_; }

 private:
  std::string device_;
  bool exists_ = false;
  std::set<std::string, std::less<>> netdevs_;
};

// Positions in `report.verdicts` that `filter` selects (paging aside), in surface order
// (OrderVerdicts).
std::vector<std::size_t> SelectVerdicts(const Report& report, const VerdictFilter& filter);

}  // namespace rdmahd
