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
#include <vector>

#include "core/collection_engine.h"

namespace rdmahd {

inline constexpr int kJsonSchemaVersion = 1;

// The verdicts, collector outcomes, `problems` (why the node cannot be judged, SysfsRootProblem)
// and the exit code `check` gives for them. Ends in a newline.
std::string ChecksDocument(const Report& report, int exit_code, const std::vector<std::string>& problems);

// Devices, ports and netdevs with their state, rate, link layer and PFC/ECN/trust (SummarizeNode);
// null for what is unknown. Ends in a newline.
std::string DevicesDocument(const Report& report);

}  // namespace rdmahd
