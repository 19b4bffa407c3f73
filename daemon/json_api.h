// The JSON documents of `rdma-healthd check --output=json` and the HTTP API (/api/v1/checks,
// /api/v1/devices). One builder per document, so the command and the endpoint print the same
// bytes for the same report. The schema is docs/api.md's; kJsonSchemaVersion changes when a field
// changes meaning or goes away (fields may be added within a version).
//
// Text from the node (device names, reasons quoting sysfs values) is hostile: every document is
// ASCII, with control characters and non-ASCII as \uNNNN and ill-formed UTF-8 as U+FFFD, so a
// document is always valid JSON whatever the tree held.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/collection_engine.h"
#include "daemon/query.h"

namespace rdmahd {

inline constexpr int kJsonSchemaVersion = 1;

// The verdicts, collector outcomes, `problems` (why the node cannot be judged, SysfsRootProblem)
// and the exit code `check` gives for them. Ends in a newline.
std::string ChecksDocument(const Report& report, int exit_code, const std::vector<std::string>& problems);
// The same document with only the verdicts `filter` selects, paged (SelectVerdicts), and an added
// "page" object: {"total": verdicts selected before paging, "offset", "limit" (null: all),
// "returned"}. exit_code, collectors, problems and summary stay the whole node's.
std::string ChecksDocument(const Report& report, int exit_code, const std::vector<std::string>& problems,
                           const VerdictFilter& filter);

// Devices, ports and netdevs with their state, rate, link layer and PFC/ECN/trust (SummarizeNode);
// null for what is unknown. Ends in a newline.
std::string DevicesDocument(const Report& report);
// Only device `device` (which the caller knows exists: DeviceSubjects) and the netdevs behind its ports.
std::string DevicesDocument(const Report& report, std::string_view device);

}  // namespace rdmahd
