// iproute2's `dcb` JSON (`dcb -j [-s] pfc show`, `dcb -j app show`), as a captured node holds it
// (the --path.dcb folder, collectors/dcb_capture.h). Pure: text in, DCB state or an Error naming
// what was wrong out.
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

#include "common/result.h"
#include "facts/dcb_state.h"

namespace rdmahd {

Result<PfcConfig> ParseDcbPfcJson(std::string_view text);
Result<std::vector<DcbAppEntry>> ParseDcbAppJson(std::string_view text);

// The inverse, as `dcb -j pfc show` and `dcb -j app show` print it, so that a capture of what the
// kernel answered over DCB netlink reads back through the parsers above (PCP entries left out: not
// judged). One line, newline-terminated.
std::string DcbPfcJsonOf(const PfcConfig& pfc);
std::string DcbAppJsonOf(const std::vector<DcbAppEntry>& entries);

// A netdev's DCB state from the contents of its capture folder's pfc.json and app.json (nullopt:
// the file is missing; `base` is the folder, named in errors). A missing or empty file is unknown
// (never "off"); a pfc.json reading `unsupported` marks the netdev as having no DCB (what `dcb`
// reports as "Operation not supported"). An Error when neither file has content or one does not
// parse (the message names the file); a missing app.json alone leaves `app` absent.
Result<DcbState> DcbStateFromCapture(const std::string& base, std::optional<std::string_view> pfc_json,
                                     std::optional<std::string_view> app_json);

}  // namespace rdmahd
