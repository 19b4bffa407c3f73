#include "collectors/pcie_link.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "collectors/host_devices.h"
#include "common/parse.h"
#include "parsers/host_dev_parse.h"

namespace rdmahd {
namespace {

// The legacy config space (256 bytes) holds the PCI Express capability.
constexpr std::size_t kLegacyConfigBytes = 256;

void AddNote(std::string& note, const std::string& more) {
  if (!note.empty()) note += "; ";
  note += more;
}

// The config space as far as this process may read it (64 bytes unprivileged).
Result<std::string> ReadConfigSpace(const NodeFs& fs, const std::string& path) {
  Result<int> fd = fs.OpenRegular(path);
  if (!fd.ok()) return fd.error();
  std::string buf(kLegacyConfigBytes, '\0');
  ssize_t n;
  do {
    n = ::pread(*fd, buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(*fd);
  if (n < 0) return Error::FromErrno("read " + path, err);
  buf.resize(static_cast<std::size_t>(n));
  return buf;
}

void ReadDeviceControl(const NodeFs& fs, const std::string& pci_dir, PcieLinkFacts& f) {
  const std::string path = pci_dir + "/config";
  Result<std::string> config = ReadConfigSpace(fs, path);
  if (!config.ok()) {
    f.config_note = config.error().message;
    return;
  }
  Result<PcieDeviceControl> devctl = ParsePcieDeviceControl(*config);
  if (!devctl.ok()) {
    f.config_note = path + ": " + devctl.error().message;
    return;
  }
  f.max_read_request_bytes = devctl->max_read_request_bytes;
  f.max_payload_bytes = devctl->max_payload_bytes;
}

}  // namespace

PcieLinkFacts ReadPcieLink(const NodeFs& fs, const std::string& device, const std::string& pci_dir,
                           bool read_config, HeldFiles* held) {
  PcieLinkFacts f;
  f.device = device;
  f.pci_function = true;
  int missing = 0;  // link attribute files that do not exist
  auto read = [&](const char* file) -> Result<std::string> {
    const std::string path = pci_dir + "/" + file;
    if (held == nullptr) return fs.ReadFile(path);
    Result<std::string_view> r = held->Read(fs, path);
    if (!r.ok()) return r.error();
    return std::string(*r);
  };
  auto speed = [&](const char* file, std::optional<double>& out, std::string& text) {
    auto raw = read(file);
    if (!raw) {
      missing += raw.error().errno_value == ENOENT;
      return AddNote(f.note, raw.error().message);
    }
    text = std::string(Trim(*raw));
    auto v = ParsePcieLinkSpeed(*raw);
    if (!v) return AddNote(f.note, pci_dir + "/" + file + ": " + v.error().message);
    out = *v;
  };
  auto width = [&](const char* file, std::optional<std::uint32_t>& out) {
    auto raw = read(file);
    if (!raw) return AddNote(f.note, raw.error().message);
    auto v = ParsePcieLinkWidth(*raw);
    if (!v) return AddNote(f.note, pci_dir + "/" + file + ": " + v.error().message);
    out = *v;
  };
  speed("current_link_speed", f.current_speed_gts, f.current_speed_text);
  speed("max_link_speed", f.max_speed_gts, f.max_speed_text);
  if (missing == 2) {
    f.note = "no current_link_speed/max_link_speed in " + pci_dir + " (not a PCIe function, or not captured)";
  } else {
    width("current_link_width", f.current_width);
    width("max_link_width", f.max_width);
  }
  if (read_config) ReadDeviceControl(fs, pci_dir, f);
  f.note = KernelPaths(fs, f.note);
  f.config_note = KernelPaths(fs, f.config_note);
  return f;
}

Status PcieLinkCollector::Collect(const CollectContext& ctx, Snapshot& snapshot, CollectorOutcome& /*outcome*/) {
  PcieFacts facts;
  facts.devices.reserve(ctx.topology.devices.size());
  const auto now = now_();
  std::map<std::string, ConfigRead> kept;
  for (const TopologyDevice& d : ctx.topology.devices) {
    PcieLinkFacts f;
    f.device = d.name;
    if (!d.device_dir) {
      f.note = "no PCI function (" + NoPciFunctionReason(d) + ")";
      facts.devices.push_back(std::move(f));
      continue;
    }
    const std::string& dir = *d.device_dir;
    auto cached = config_.find(dir);
    const bool reread = cached == config_.end() || now - cached->second.at >= kConfigRereadInterval;
    f = ReadPcieLink(ctx.fs, d.name, dir, reread, &held_);
    if (reread) {
      kept[dir] = ConfigRead{now, f.max_read_request_bytes, f.max_payload_bytes, f.config_note};
    } else {
      f.max_read_request_bytes = cached->second.max_read_request_bytes;
      f.max_payload_bytes = cached->second.max_payload_bytes;
      f.config_note = cached->second.note;
      kept[dir] = cached->second;
    }
    f.pci_address = d.pci_address;
    facts.devices.push_back(std::move(f));
  }
  // A device that left (or a new root) leaves its held files behind: start over.
  if (kept.size() != config_.size() ||
      !std::equal(kept.begin(), kept.end(), config_.begin(), [](const auto& a, const auto& b) { return a.first == b.first; })) {
    held_.Clear();
  }
  config_ = std::move(kept);
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void PcieLinkCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const PcieFacts* facts = snapshot.Get<PcieFacts>();
  if (facts == nullptr) return;
  auto info = sink.Gauge("rdma_pcie_info", "The PCI function of an RDMA device (always 1).");
  auto cur_speed = sink.Gauge("rdma_pcie_link_current_transfers_per_second",
                              "PCIe link speed the device trained at, transfers per second per lane (current_link_speed).");
  auto max_speed = sink.Gauge("rdma_pcie_link_max_transfers_per_second",
                              "Fastest PCIe link speed the device and slot support, transfers per second per lane (max_link_speed).");
  auto cur_width = sink.Gauge("rdma_pcie_link_current_width", "PCIe lanes the link trained at (current_link_width).");
  auto max_width = sink.Gauge("rdma_pcie_link_max_width", "PCIe lanes the device supports (max_link_width).");
  auto degraded = sink.Gauge("rdma_pcie_link_degraded",
                             "1 when the PCIe link trained below its maximum speed or width, else 0.");
  auto mrrs = sink.Gauge("rdma_pcie_max_read_request_bytes",
                         "PCIe Max_Read_Request_Size from the Device Control register, bytes (root only).");
  auto mps = sink.Gauge("rdma_pcie_max_payload_bytes",
                        "PCIe Max_Payload_Size from the Device Control register, bytes (root only).");
  for (const PcieLinkFacts& f : facts->devices) {
    if (!f.pci_function) continue;
    const std::string& d = f.device;
    if (f.pci_address) info.Add({{"device", d}, {"pci_address", *f.pci_address}}, 1);
    if (f.current_speed_gts) cur_speed.Add({{"device", d}}, *f.current_speed_gts * 1e9);
    if (f.max_speed_gts) max_speed.Add({{"device", d}}, *f.max_speed_gts * 1e9);
    if (f.current_width) cur_width.Add({{"device", d}}, *f.current_width);
    if (f.max_width) max_width.Add({{"device", d}}, *f.max_width);
    if (f.current_speed_gts && f.max_speed_gts && f.current_width && f.max_width) {
      const bool slow = *f.current_speed_gts < *f.max_speed_gts || *f.current_width < *f.max_width;
      degraded.Add({{"device", d}}, slow ? 1 : 0);
    }
    if (f.max_read_request_bytes) mrrs.Add({{"device", d}}, *f.max_read_request_bytes);
    if (f.max_payload_bytes) mps.Add({{"device", d}}, *f.max_payload_bytes);
  }
}

RDMAHD_REGISTER_COLLECTOR("pcie", PcieLinkCollector,
                          "PCIe link of each RDMA device: current vs maximum speed and width, MaxReadReq");

}  // namespace rdmahd
