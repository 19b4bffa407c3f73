#include "parsers/host_dev_parse.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "common/parse.h"

namespace rdmahd {
namespace {

std::string Shown(std::string_view text) {
  std::string_view t = Trim(text);
  std::string out(1, '"');
  out.append(t.substr(0, 40));
  if (t.size() > 40) out.append("...");
  out.push_back('"');
  return out;
}

// PCI config space offsets (PCI Local Bus spec 3.0; PCIe base spec 4.0 section 7.5).
constexpr std::size_t kStatus = 0x06;
constexpr std::uint16_t kStatusCapList = 0x10;
constexpr std::size_t kCapPointer = 0x34;
constexpr std::size_t kHeaderBytes = 64;
constexpr std::uint8_t kCapIdPcie = 0x10;
constexpr std::size_t kPcieDevCtl = 0x08;
// 256-byte legacy space, 4-byte aligned capabilities of at least 4 bytes: at most 48 of them.
constexpr int kMaxCapabilities = 48;

std::uint8_t Byte(std::string_view s, std::size_t i) { return static_cast<std::uint8_t>(s[i]); }
std::uint16_t Word(std::string_view s, std::size_t i) {
  return static_cast<std::uint16_t>(Byte(s, i) | (Byte(s, i + 1) << 8));
}

}  // namespace

Result<double> ParsePcieLinkSpeed(std::string_view text) {
  std::string_view t = Trim(text);
  const std::size_t unit = t.find("GT/s");
  if (unit == std::string_view::npos) return Error{"not a PCIe link speed: " + Shown(text), EINVAL};
  std::string_view rest = Trim(t.substr(unit + 4));
  if (!rest.empty() && rest != "PCIe") return Error{"not a PCIe link speed: " + Shown(text), EINVAL};
  std::optional<double> v = ParseDouble(Trim(t.substr(0, unit)));
  // 2.5 (Gen1) .. 64 (Gen6); 128 leaves room for Gen7 without accepting nonsense.
  if (!v || !std::isfinite(*v) || *v <= 0 || *v > 128) {
    return Error{"not a PCIe link speed: " + Shown(text), EINVAL};
  }
  return *v;
}

Result<std::uint32_t> ParsePcieLinkWidth(std::string_view text) {
  std::string_view t = Trim(text);
  if (!t.empty() && (t.front() == 'x' || t.front() == 'X')) t.remove_prefix(1);
  std::optional<std::uint64_t> v = ParseU64(t);
  // The link width field holds x1..x32; 0 is what the kernel prints when it cannot read it.
  if (!v || *v == 0 || *v > 32) return Error{"not a PCIe link width: " + Shown(text), EINVAL};
  return static_cast<std::uint32_t>(*v);
}

Result<PcieDeviceControl> ParsePcieDeviceControl(std::string_view config) {
  if (config.size() <= kHeaderBytes) {
    return Error{"only " + std::to_string(config.size()) +
                     " bytes of config space readable (the kernel shows capabilities to root only)",
                 EACCES};
  }
  if ((Word(config, kStatus) & kStatusCapList) == 0) return Error{"config space has no capability list", ENOENT};
  std::size_t at = Byte(config, kCapPointer) & 0xFC;
  for (int i = 0; i < kMaxCapabilities && at != 0; ++i) {
    if (at < kHeaderBytes || at + 2 > config.size()) {
      return Error{"capability list points outside the readable config space (offset " + std::to_string(at) + ")",
                   EINVAL};
    }
    if (Byte(config, at) == kCapIdPcie) {
      if (at + kPcieDevCtl + 2 > config.size()) {
        return Error{"PCI Express capability truncated at offset " + std::to_string(at), EINVAL};
      }
      const std::uint16_t devctl = Word(config, at + kPcieDevCtl);
      const std::uint32_t mrrs = (devctl >> 12) & 7;
      const std::uint32_t mps = (devctl >> 5) & 7;
      if (mrrs > 5 || mps > 5) {
        return Error{"Device Control register holds a reserved size encoding (" + std::to_string(devctl) + ")", EINVAL};
      }
      return PcieDeviceControl{128u << mrrs, 128u << mps};
    }
    at = Byte(config, at + 1) & 0xFC;
  }
  if (at != 0) return Error{"capability list does not end (a loop?)", EINVAL};
  return Error{"no PCI Express capability in the config space", ENOENT};
}

Result<std::uint32_t> ParseRoceTos(std::string_view text) {
  std::optional<std::uint64_t> v = ParseU64(text);
  if (!v || *v > 255) return Error{"not a ToS byte (0..255): " + Shown(text), EINVAL};
  return static_cast<std::uint32_t>(*v);
}

Result<std::optional<std::uint32_t>> ParseTrafficClass(std::string_view text) {
  std::string_view t = Trim(text);
  constexpr std::string_view kKey = "tclass=";
  if (const std::size_t at = t.find(kKey); at != std::string_view::npos) {
    t = t.substr(at + kKey.size());
    t = t.substr(0, t.find_first_of(" \t\n"));
  }
  std::optional<std::int64_t> v = ParseI64(t);
  if (!v || *v > 255) return Error{"not a traffic class: " + Shown(text), EINVAL};
  if (*v < 0) return std::optional<std::uint32_t>{};
  return std::optional<std::uint32_t>{static_cast<std::uint32_t>(*v)};
}

IommuCmdline ParseIommuCmdline(std::string_view cmdline) {
  IommuCmdline out;
  bool off = false, pt = false, translated = false;
  std::string_view t = Trim(cmdline);
  while (!t.empty()) {
    const std::size_t sp = t.find_first_of(" \t\n");
    std::string_view word = t.substr(0, sp);
    t = sp == std::string_view::npos ? std::string_view{} : Trim(t.substr(sp));
    const std::size_t eq = word.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key != "intel_iommu" && key != "amd_iommu" && key != "iommu" && key != "iommu.passthrough" &&
        key != "iommu.strict") {
      continue;
    }
    if (!out.options.empty()) out.options += ' ';
    out.options += std::string(word);
    // Values may be comma lists (intel_iommu=on,sm_on). Later options override earlier ones, as the
    // kernel applies them in order.
    for (std::string_view rest = value; !rest.empty();) {
      const std::size_t c = rest.find(',');
      std::string_view v = rest.substr(0, c);
      rest = c == std::string_view::npos ? std::string_view{} : rest.substr(c + 1);
      if ((key == "intel_iommu" || key == "amd_iommu" || key == "iommu") && v == "off") {
        off = true;
      } else if ((key == "intel_iommu" || key == "amd_iommu") && v == "on") {
        off = false;
        translated = true;
      } else if (key == "iommu" && (v == "pt" || v == "nopt" || v == "force")) {
        if (v == "force") off = false;
        pt = v == "pt" || (pt && v == "force");
        if (v == "nopt") translated = true;
      } else if (key == "iommu.passthrough") {
        pt = v == "1" || v == "on" || v == "y";
        if (!pt) translated = true;
      }
    }
  }
  if (off) {
    out.mode = "off";
  } else if (pt) {
    out.mode = "passthrough";
  } else if (translated) {
    out.mode = "translated";
  } else {
    out.mode = "default";
  }
  return out;
}

}  // namespace rdmahd
