// The status page at `/`: the node's verdicts as people read them (failed, then warning, each by
// what it costs, with reason and fix; unknown and ok folded and counted; identical verdicts of
// several subjects on one row: core/verdict_order.h), devices, ports and netdevs at a glance, peers, and
// the daemon's own health. Server-rendered HTML with its style inline: no script, no external
// asset, usable without JavaScript, from a phone to a desktop. Every value is escaped (sysfs is
// hostile input: see HtmlText).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/collection_engine.h"

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

// The whole page. `problems`: why the node cannot be judged (SysfsRootProblem), shown with the
// verdicts.
std::string RenderStatusPage(const Report& report, const std::vector<std::string>& problems,
                             const DaemonStatus& daemon);

}  // namespace rdmahd
