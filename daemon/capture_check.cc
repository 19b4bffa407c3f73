#include "daemon/capture_check.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "common/logging.h"
#include "common/node_fs.h"
#include "daemon/capture_archive.h"

namespace rdmahd {

using Json = nlohmann::json;

void LeaveIfACollectorIsStillRunning(const std::string& collector, int exit_code, std::optional<TempDir>* extraction) {
  if (collector.empty()) return;
  if (extraction) extraction->reset();
  log::Warn("leaving without waiting for a collector that is still running", {{"collector", collector}});
  std::fflush(nullptr);
  std::_Exit(exit_code);
}

Result<TempDir> OpenCaptureForCheck(Options& options) {
  auto dir = TempDir::Create("rdma-healthd-capture-");
  if (!dir) return dir.error();
  if (Status s = ExtractCapture(options.check_capture, dir->path()); !s.ok()) return s.error();
  const std::string& d = dir->path();
  options.sysfs = d + "/sys";
  options.procfs = d + "/proc";
  options.dcb_dir = d + "/dcb";
  options.dev = d + "/dev";
  struct stat st{};
  if (::lstat((d + "/kernel-log.txt").c_str(), &st) == 0 && S_ISREG(st.st_mode)) options.kmsg = d + "/kernel-log.txt";
  if (options.config_file.empty() && ::lstat((d + "/config/config.yaml").c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    options.config_file = d + "/config/config.yaml";
    options.config_captured_root = d;  // its paths name files of the captured node: read in the bundle
  }
  for (const char* sub : {"/sys", "/proc", "/dcb"}) ::mkdirat(AT_FDCWD, (d + sub).c_str(), 0755);
  return dir;
}

std::optional<std::string> IncompleteCaptureProblem(const std::string& root) {
  const std::string path = root + "/manifest.json";
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;  // no manifest: the bundle says nothing
  constexpr std::string_view kUnknown = ": whether the bundle is complete is unknown";
  auto text = ReadRegularFile(path, 4u << 20);
  if (!text) return "manifest.json cannot be read (not a regular file, or over 4 MiB)" + std::string(kUnknown);
  const Json m = Json::parse(*text, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return "manifest.json is not a JSON object" + std::string(kUnknown);
  // The limits it stopped at: "cut_by" (since it was written), and for older bundles the reasons
  // their skips give. Only known names are kept: nothing of the file's text is printed.
  std::set<std::string> cut;
  if (auto it = m.find("cut_by"); it != m.end() && it->is_array()) {
    for (const Json& c : *it) {
      if (c.is_string() && (c == "entries" || c == "total_bytes" || c == "seconds")) cut.insert(c.get<std::string>());
    }
  }
  std::uint64_t skipped = 0;
  if (auto it = m.find("skipped_by_reason"); it != m.end() && it->is_object()) {
    for (const auto& [reason, count] : it->items()) {
      std::string kind;
      if (reason.rfind("over the cap of ", 0) == 0) kind = "entries";
      else if (reason.rfind("over the total cap of ", 0) == 0) kind = "total_bytes";
      else if (reason == "the capture's time budget was spent") kind = "seconds";
      if (kind.empty()) continue;
      cut.insert(kind);
      if (count.is_number_unsigned()) skipped += count.get<std::uint64_t>();
    }
  }
  const auto complete = m.find("complete");
  const bool says_incomplete = complete != m.end() && complete->is_boolean() && !complete->get<bool>();
  if (cut.empty() && !says_incomplete) return std::nullopt;
  auto limit = [&](const char* key) -> std::string {
    const auto l = m.find("limits");
    if (l == m.end() || !l->is_object()) return "";
    const auto v = l->find(key);
    if (v == l->end() || !v->is_number()) return "";
    if (v->is_number_unsigned()) return std::to_string(v->get<std::uint64_t>()) + " ";
    std::ostringstream n;
    n << v->get<double>();
    return n.str() + " ";
  };
  // Short enough for `check --output=summary`'s line (kCheckSummaryBytes).
  std::vector<std::string> caps;
  if (cut.count("entries")) caps.push_back("its cap of " + limit("entries") + "entries");
  if (cut.count("total_bytes")) caps.push_back("its cap of " + limit("total_bytes") + "bytes");
  if (cut.count("seconds")) caps.push_back("its time budget of " + limit("seconds") + "seconds");
  std::string why = "the bundle is incomplete: ";
  if (caps.empty()) {
    why += "its manifest.json says so; what is missing is not judged here";
  } else {
    why += "the capture stopped at ";
    for (std::size_t i = 0; i < caps.size(); ++i) why += (i == 0 ? "" : i + 1 == caps.size() ? " and " : ", ") + caps[i];
    if (skipped > 0) why += " and left out " + std::to_string(skipped) + " paths";
    why += " (manifest.json names them), not judged here";
  }
  if (auto code = m.find("node_verdict_exit_code"); code != m.end() && code->is_number_integer()) {
    why += "; the node's own check said exit " + std::to_string(code->get<std::int64_t>());
  }
  return why;
}

std::string ExtractedCaptureRoot(const Options& options) {
  constexpr std::string_view kSys = "/sys";
  const std::string& sys = options.sysfs;
  if (options.check_capture.empty() || sys.size() <= kSys.size() ||
      sys.compare(sys.size() - kSys.size(), kSys.size(), kSys) != 0) {
    return {};
  }
  return sys.substr(0, sys.size() - kSys.size());
}

std::string BundleRelative(std::string_view text, const std::string& root) {
  if (root.empty()) return std::string(text);
  std::vector<std::string> roots{root};
  if (char real[PATH_MAX]; ::realpath(root.c_str(), real) != nullptr && real != root) roots.emplace_back(real);
  // The longer first: one may be a prefix of the other.
  std::sort(roots.begin(), roots.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const std::string& r : roots) {
    std::string next;
    next.reserve(out.size());
    for (std::size_t i = 0; i < out.size();) {
      if (out.compare(i, r.size(), r) == 0) {
        const std::size_t after = i + r.size();
        if (after < out.size() && out[after] == '/') {
          i = after + 1;  // "ROOT/x" -> "x"
          continue;
        }
        const char c = after < out.size() ? out[after] : ' ';
        const bool name_goes_on = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        if (!name_goes_on) {  // another path that only starts like ROOT is left alone
          next += "the bundle";
          i = after;
          continue;
        }
      }
      next += out[i++];
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace rdmahd
