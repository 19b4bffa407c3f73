// Offline DCB input: a captured node's DCB state as iproute2's `dcb` prints it in JSON
// (parsers/dcb_json.h), so a node captured as a sysfs tree + `dcb -j` output can be analysed on
// another machine (--path.dcb).
//
// Capture folder layout (one sub-folder per netdev; every file optional):
//   <dir>/<netdev>/pfc.json        dcb -j [-s] pfc show dev <netdev>
//   <dir>/<netdev>/app.json        dcb -j app show dev <netdev>
//   <dir>/<netdev>/ethtool-S.txt   ethtool -S <netdev>     (driver statistics)
//   <dir>/<netdev>/ethtool-a.txt   ethtool -a <netdev>     (global pause)
// A missing or empty file is unknown (never "off"). A file containing `unsupported` marks the
// netdev as having no DCB (what `dcb` reports as "Operation not supported").
#pragma once

#include <string>

#include "common/result.h"
#include "facts/dcb_state.h"

namespace rdmahd {

// The netdev's DCB state from the capture folder `dir`, read once (the "roce" collector holds the
// files instead and hands their contents to DcbStateFromCapture). An Error when nothing usable is
// there (the netdev's folder is missing, or neither file exists) or a file does not parse (message
// names the file); a missing app.json alone leaves `app` absent.
Result<DcbState> ReadDcbCapture(const std::string& dir, const std::string& netdev);

}  // namespace rdmahd
