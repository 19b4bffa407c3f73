#include "collectors/dcb_capture.h"

#include <cerrno>
#include <optional>
#include <string_view>

#include "common/node_fs.h"
#include "parsers/dcb_json.h"

namespace rdmahd {

Result<DcbState> ReadDcbCapture(const std::string& dir, const std::string& netdev) {
  // Reads stay inside the capture folder, like every read of a captured tree (common/node_fs.h).
  const NodeFs capture("", "", dir);
  const std::string base = dir + "/" + netdev;
  if (!capture.IsDir(base)) return Error{"no DCB capture for " + netdev + " (" + base + ")", ENOENT};
  auto pfc = capture.ReadFile(base + "/pfc.json");
  auto app = capture.ReadFile(base + "/app.json");
  return DcbStateFromCapture(base, pfc ? std::optional<std::string_view>(*pfc) : std::nullopt,
                             app ? std::optional<std::string_view>(*app) : std::nullopt);
}

}  // namespace rdmahd
