// The status page at `/`: the node's verdicts as people read them (failed, then warning, each by
// what it costs, with reason and fix; unknown and ok folded and counted; identical verdicts of
// several subjects on one row: core/verdict_order.h), devices, ports and netdevs at a glance, peers, and
// the daemon's own health; bounded on a big node (kPageProblemRows and the other bounds below), with
// the rest on demand: /?status=...&check=... lists verdicts, /?device=NAME shows one device,
// /?view=devices pages the devices. Server-rendered HTML with its style inline: no script, no external
// asset, usable without JavaScript, from a phone to a desktop. Every value is escaped (sysfs is
// hostile input: see HtmlText).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/collection_engine.h"
#include "daemon/http_server.h"
#include "daemon/query.h"

namespace rdmahd {

// `s` as HTML text (element content or a quoted attribute value): shown as TerminalText shows it
// (control bytes, bidi controls and ill-formed UTF-8 as visible escapes, the result valid UTF-8),
// with & < > " ' as character references. Nothing in `s` can open a tag or leave an attribute.
std::string HtmlText(std::string_view s);

// What the page says about the daemon itself; the report says the rest.
struct DaemonStatus {
  std::string version;
  std::string hostname;
  double uptime_seconds = 0;
  std::string config_source;
  bool last_reload_ok = true;
  double last_reload_success_unix = 0;  // 0: never
  std::string sysfs_root;
  bool ready = false;
  // Every collector the engine runs, with its one-line description and whether the config has it on.
  struct Collector {
    std::string name;
    std::string description;
    bool enabled = true;
  };
  std::vector<Collector> collectors;
};

// Bounds that keep `/` small whatever the node's size (a 2,000-device node has ~12,000 verdicts).
// Failed and warning rows (groups, core/verdict_order.h) shown on `/`; the rest are on a list page.
inline constexpr std::size_t kPageProblemRows = 200;
// Subjects a failed or warning row on `/` names; past it "and N more" links to the check's list.
inline constexpr std::size_t kPageRowSubjects = 50;
// Unknown and ok verdicts folded row by row on `/` up to this many together; past it they are
// counted per check, each count linking to its list.
inline constexpr std::size_t kPageFoldedVerdicts = 200;
// Devices in the ports table of `/` (and per page of /?view=devices); past it `/` shows the devices
// with a failed or warning verdict (at most this many) and links to the paged list.
inline constexpr std::size_t kPageDevices = 100;
// Rows of a verdict list (/?status=...) unless `limit` says otherwise, and the most it may say.
inline constexpr std::size_t kPageListRows = 200;
inline constexpr std::size_t kPageListMaxRows = 1000;

// What `/` shows, from its query (ParseStatusPageQuery).
struct StatusPageView {
  enum class Kind {
    kSummary,   // no argument: the bounded page
    kVerdicts,  // status, check, device (with one of the others), offset, limit: a list of verdict rows
    kDevice,    // device=NAME alone: that device's verdicts of every status, its ports and netdevs
    kDevices,   // view=devices [offset]: the ports table, kPageDevices devices a page
  };
  Kind kind = Kind::kSummary;
  VerdictFilter filter;  // kVerdicts: offset and limit count rows; kDevice: the device
  std::size_t offset = 0;  // kDevices: devices skipped
};

// The view `query` asks for, or an Error naming the parameter (answered 400). Whether a device
// exists is the caller's to check (404).
Result<StatusPageView> ParseStatusPageQuery(const std::vector<QueryArgument>& query);

// The whole page. `problems`: why the node cannot be judged (SysfsRootProblem), shown with the
// verdicts.
std::string RenderStatusPage(const Report& report, const std::vector<std::string>& problems,
                             const DaemonStatus& daemon, const StatusPageView& view = {});

}  // namespace rdmahd
