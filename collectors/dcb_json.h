// Offline DCB input: a captured node's DCB state as iproute2's `dcb` prints it in JSON, so a node
// captured as a sysfs tree + `dcb -j` output can be analysed on another machine (--path.dcb).
//
// Capture folder layout (one sub-folder per netdev; every file optional):
//   <dir>/<netdev>/pfc.json        dcb -j [-s] pfc show dev <netdev>
//   <dir>/<netdev>/app.json        dcb -j app show dev <netdev>
//   <dir>/<netdev>/ethtool-S.txt   ethtool -S <netdev>     (driver statistics)
//   <dir>/<netdev>/ethtool-a.txt   ethtool -a <netdev>     (global pause)
// A missing or empty file is unknown (never "off"). A file containing `unsupported` marks the
// netdev as having no DCB (what `dcb` reports as "Operation not supported").
//
// JSON shapes (iproute2 dcb/dcb_pfc.c, dcb/dcb_app.c):
//   pfc: {"pfc_cap":8,"macsec_bypass":false,"delay":4096,
//         "prio_pfc":[false,false,false,true,false,false,false,false],
//         "requests":[0,..],"indications":[0,..]}        (requests/indications only with -s)
//   app: {"default_prio":[0],"ethtype_prio":[[35078,3]],"dscp_prio":[[26,3],[48,6]],
//         "pcp_prio":[["1de",3]],"stream_port_prio":[[4791,3]],"dgram_port_prio":[..],"port_prio":[..]}
// Older iproute2 printed on/off flags as the strings "on"/"off"; both forms are accepted. The
// output may be wrapped in a one-element array.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "facts/dcb_state.h"
#include "common/result.h"

namespace rdmahd {

Result<PfcConfig> ParseDcbPfcJson(std::string_view text);
Result<std::vector<DcbAppEntry>> ParseDcbAppJson(std::string_view text);

// The netdev's DCB state from the capture folder. An Error when nothing usable is there (the
// netdev's folder is missing, or neither file exists) or a file does not parse (message names the
// file); a missing app.json alone leaves `app` absent.
Result<DcbState> ReadDcbCapture(const std::string& dir, const std::string& netdev);

// The same from the contents of `base`/pfc.json and `base`/app.json (nullopt: the file is missing),
// for callers that hold the files open; `base` names the folder in errors.
Result<DcbState> DcbStateFromCapture(const std::string& base, std::optional<std::string_view> pfc_json,
                                     std::optional<std::string_view> app_json);

}  // namespace rdmahd
