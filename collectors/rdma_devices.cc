#include "collectors/rdma_devices.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "common/parse.h"

namespace rdmahd {
namespace {

// The kernel object behind a path or held descriptor is gone (device unregistered or re-created).
bool IsGoneErrno(int err) { return err == ENODEV || err == ENOENT || err == ENXIO; }

// Device attributes, in the order the info metric lists them.
// `stable`: fixed while the device object exists (see the header), read once.
struct DeviceAttr {
  std::string_view file;
  std::optional<std::string> RdmaDeviceFacts::*member;
  bool stable;
};
constexpr std::array<DeviceAttr, 6> kDeviceAttrs = {{
    {"fw_ver", &RdmaDeviceFacts::fw_ver, false},  // live firmware activation changes it
    {"board_id", &RdmaDeviceFacts::board_id, true},
    {"hca_type", &RdmaDeviceFacts::hca_type, true},
    {"node_guid", &RdmaDeviceFacts::node_guid, true},
    {"sys_image_guid", &RdmaDeviceFacts::sys_image_guid, true},
    {"node_type", &RdmaDeviceFacts::node_type, true},
}};

// The first GID slots are reserved for default GIDs (one per GID type, 2 on RoCE); a non-default
// GID added to an empty table lands right after them.
constexpr std::uint32_t kMinGidWindow = 3;

// Counter files with a name of their own, after node_exporter's infiniband collector
// (node_infiniband_X -> rdma_port_X, with node_exporter's "port_" prefix dropped).
struct NamedCounter {
  std::string_view file;
  std::string_view metric;
  std::string_view help;
  double scale;  // port_*_data count 4-byte words
};
constexpr NamedCounter kNamedCounters[] = {
    {"port_rcv_data", "rdma_port_data_received_bytes_total", "Data octets received on the port (counters/port_rcv_data x 4).", 4},
    {"port_xmit_data", "rdma_port_data_transmitted_bytes_total", "Data octets transmitted on the port (counters/port_xmit_data x 4).", 4},
    {"port_rcv_packets", "rdma_port_packets_received_total", "Packets received on all VLs, including errors (counters/port_rcv_packets).", 1},
    {"port_xmit_packets", "rdma_port_packets_transmitted_total", "Packets transmitted on all VLs, including errors (counters/port_xmit_packets).", 1},
    {"port_rcv_errors", "rdma_port_errors_received_total", "Received packets containing an error (counters/port_rcv_errors).", 1},
    {"port_rcv_discards", "rdma_port_discards_received_total", "Inbound packets discarded because the port was down or congested (counters/port_rcv_discards).", 1},
    {"port_xmit_discards", "rdma_port_discards_transmitted_total", "Outbound packets discarded because the port was down or congested (counters/port_xmit_discards).", 1},
    {"port_rcv_constraint_errors", "rdma_port_constraint_errors_received_total", "Received packets discarded for constraint violations (counters/port_rcv_constraint_errors).", 1},
    {"port_xmit_constraint_errors", "rdma_port_constraint_errors_transmitted_total", "Packets not transmitted because of constraint violations (counters/port_xmit_constraint_errors).", 1},
    {"port_xmit_wait", "rdma_port_transmit_wait_total", "Ticks with data to send but none sent (counters/port_xmit_wait; 32-bit on many HCAs, saturates).", 1},
    {"link_downed", "rdma_port_link_downed_total", "Times the link failed to recover from an error and went down (counters/link_downed).", 1},
    {"link_error_recovery", "rdma_port_link_error_recovery_total", "Times the link recovered from an error (counters/link_error_recovery).", 1},
    {"symbol_error", "rdma_port_symbol_error_total", "Minor link errors on physical lanes (counters/symbol_error).", 1},
    {"local_link_integrity_errors", "rdma_port_local_link_integrity_errors_total", "Times local physical errors exceeded the threshold (counters/local_link_integrity_errors).", 1},
    {"excessive_buffer_overrun_errors", "rdma_port_excessive_buffer_overrun_errors_total", "Consecutive flow-control periods with buffer overruns (counters/excessive_buffer_overrun_errors).", 1},
    {"VL15_dropped", "rdma_port_vl15_dropped_total", "Incoming VL15 (management) packets dropped (counters/VL15_dropped).", 1},
    {"port_rcv_remote_physical_errors", "rdma_port_receive_remote_physical_errors_total", "Received packets marked bad by the remote end (counters/port_rcv_remote_physical_errors).", 1},
    {"port_rcv_switch_relay_errors", "rdma_port_receive_switch_relay_errors_total", "Received packets that could not be forwarded (counters/port_rcv_switch_relay_errors).", 1},
    {"unicast_rcv_packets", "rdma_port_unicast_packets_received_total", "Unicast packets received, including errors (counters/unicast_rcv_packets).", 1},
    {"unicast_xmit_packets", "rdma_port_unicast_packets_transmitted_total", "Unicast packets transmitted, including errors (counters/unicast_xmit_packets).", 1},
    {"multicast_rcv_packets", "rdma_port_multicast_packets_received_total", "Multicast packets received, including errors (counters/multicast_rcv_packets).", 1},
    {"multicast_xmit_packets", "rdma_port_multicast_packets_transmitted_total", "Multicast packets transmitted, including errors (counters/multicast_xmit_packets).", 1},
};
// counters_ext/ (mlx4's 64-bit extended counters; node_exporter's "legacy_" family).
constexpr NamedCounter kNamedExtCounters[] = {
    {"port_rcv_data_64", "rdma_port_legacy_data_received_bytes_total", "Data octets received, 64-bit (counters_ext/port_rcv_data_64 x 4).", 4},
    {"port_xmit_data_64", "rdma_port_legacy_data_transmitted_bytes_total", "Data octets transmitted, 64-bit (counters_ext/port_xmit_data_64 x 4).", 4},
    {"port_rcv_packets_64", "rdma_port_legacy_packets_received_total", "Packets received, 64-bit (counters_ext/port_rcv_packets_64).", 1},
    {"port_xmit_packets_64", "rdma_port_legacy_packets_transmitted_total", "Packets transmitted, 64-bit (counters_ext/port_xmit_packets_64).", 1},
    {"port_unicast_rcv_packets", "rdma_port_legacy_unicast_packets_received_total", "Unicast packets received (counters_ext/port_unicast_rcv_packets).", 1},
    {"port_unicast_xmit_packets", "rdma_port_legacy_unicast_packets_transmitted_total", "Unicast packets transmitted (counters_ext/port_unicast_xmit_packets).", 1},
    {"port_multicast_rcv_packets", "rdma_port_legacy_multicast_packets_received_total", "Multicast packets received (counters_ext/port_multicast_rcv_packets).", 1},
    {"port_multicast_xmit_packets", "rdma_port_legacy_multicast_packets_transmitted_total", "Multicast packets transmitted (counters_ext/port_multicast_xmit_packets).", 1},
};

// Where each named counter of a table sits in one CounterValues name list, and which slots have no
// name of their own. Computed once per distinct name list in a Render (ports of one driver share
// equal lists, and discovery shares equal lists by pointer).
struct NamedSlots {
  const CounterValues::Names* names = nullptr;
  std::vector<std::optional<std::size_t>> slot_of;  // per table entry
  std::vector<bool> unnamed;                        // per slot
};

template <std::size_t N>
NamedSlots MapNamedSlots(const NamedCounter (&table)[N], const CounterValues::Names& names) {
  NamedSlots m;
  m.names = &names;
  m.slot_of.resize(N);
  m.unnamed.assign(names.size(), true);
  for (std::size_t k = 0; k < N; ++k) {
    auto it = std::lower_bound(names.begin(), names.end(), table[k].file);
    if (it != names.end() && *it == table[k].file) {
      const auto slot = static_cast<std::size_t>(it - names.begin());
      m.slot_of[k] = slot;
      m.unnamed[slot] = false;
    }
  }
  return m;
}

std::optional<std::uint32_t> ParseIndex(std::string_view s) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "0000:3b:00.0" (domain:bus:device.function).
bool IsPciAddress(std::string_view s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!IsHex(s[i])) return false;
  }
  return true;
}

// An attribute to hold: an existing file, or a symlink that is dangling or leaves a captured tree
// (its reads then fail with an error naming it, every collection, instead of the value vanishing
// without a word).
bool AttributePresent(const NodeFs& fs, const std::string& path) { return fs.Exists(path) || fs.ReadLink(path).ok(); }

std::optional<ino_t> DirInode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st.st_ino;
}


}  // namespace

// ---------------------------------------------------------------------------------------------
// CounterValues

CounterValues::CounterValues(std::shared_ptr<const Names> names)
    : names_(std::move(names)), values_(names_ ? names_->size() : 0) {}

CounterValues CounterValues::FromPairs(std::vector<std::pair<std::string, std::uint64_t>> values) {
  std::sort(values.begin(), values.end());
  auto names = std::make_shared<Names>();
  names->reserve(values.size());
  for (const auto& [name, v] : values) names->push_back(name);
  CounterValues out(std::move(names));
  for (std::size_t i = 0; i < values.size(); ++i) out.Set(i, values[i].second);
  return out;
}

void CounterValues::Set(std::size_t slot, std::uint64_t v) {
  if (!values_[slot]) ++present_;
  values_[slot] = v;
}

std::optional<std::uint64_t> CounterValues::Find(std::string_view name) const {
  if (!names_) return std::nullopt;
  auto it = std::lower_bound(names_->begin(), names_->end(), name);
  if (it == names_->end() || *it != name) return std::nullopt;
  return values_[static_cast<std::size_t>(it - names_->begin())];
}

std::uint64_t CounterValues::at(std::string_view name) const {
  std::optional<std::uint64_t> v = Find(name);
  if (!v) throw std::out_of_range("CounterValues::at: no value for " + std::string(name));
  return *v;
}

// ---------------------------------------------------------------------------------------------
// Cached layout

// One counter directory: the names (shared with the snapshots) and a held file per name.
struct CounterDir {
  std::shared_ptr<const CounterValues::Names> names;
  std::vector<HeldFile> files;  // parallel to *names
};

struct GidSlot {  // what was last seen in one GID table slot
  bool present = false;
  std::string gid, type, ndev;
};

struct PortLayout {
  std::uint32_t port = 0;
  std::string dir;
  std::optional<HeldFile> state, phys_state, rate;  // nullopt: file absent
  // Stable: read until one read succeeds, then the value is kept and the descriptor closed.
  std::optional<HeldFile> link_layer;
  std::optional<std::string> link_layer_value;
  CounterDir counters, counters_ext, hw_counters;
  bool hw_counters_from_files = false;  // RDMA netlink failed for this port: read the files
  bool has_gid_table = false;
  std::string gids_dir, types_dir, ndevs_dir;  // with trailing '/'
  std::vector<GidSlot> gid_slots;              // one per table entry
  std::vector<std::optional<HeldFile>> gid_files;  // held only for slots inside the window
  std::uint32_t gid_window = 0;                // slots read every collection: [0, gid_window)
  bool gid_table_scanned = false;
};

struct RdmaDevicesCollector::DeviceLayout {
  std::string name;
  std::string dir, dir_prefix;  // prefix = dir + "/"
  ino_t inode = 0;
  // nullopt: file absent, or (stable attributes) already read into stable_values.
  std::array<std::optional<HeldFile>, kDeviceAttrs.size()> attrs;
  std::array<std::optional<std::string>, kDeviceAttrs.size()> stable_values;
  std::optional<int> numa_node;
  std::optional<std::string> pci_address;
  std::vector<PortLayout> ports;
  bool complete = true;  // false: discovery hit errors; rediscover next collection
};

struct RdmaDevicesCollector::State {
  std::string sysfs_root;
  // Layouts own their held descriptors: dropping a layout closes them.
  std::unordered_map<std::string, DeviceLayout> layouts;
  std::uint64_t collections = 0;
  std::string read_buf;  // content of the last held read
  std::string path_buf;  // reused for GID paths

  void Forget(const std::string& name) { layouts.erase(name); }
  void ForgetAll() { layouts.clear(); }
};

namespace {

// Reads one device's attributes through held descriptors. Problems with single values go to
// `errors`; a read showing the device is gone stops the reader (`gone` is then set). A device is
// gone only when its own directory is (or was re-created, a new inode): ENOENT/ENODEV on one file
// while the directory stands (a dangling symlink in counters/, an attribute the driver removed)
// costs that value only, or one bad file would hide the whole device and its failing verdicts.
class DeviceReader {
 public:
  DeviceReader(const NodeFs& fs, std::string& buf, std::vector<std::string>& errors, const std::string& dir,
               ino_t inode)
      : fs_(fs), buf_(buf), errors_(errors), dir_(dir), inode_(inode) {}

  const NodeFs& fs() const { return fs_; }

  bool gone() const { return gone_.has_value(); }
  const std::string& gone_message() const { return *gone_; }

  // Held read; nullopt when the value is unavailable (error recorded) or the device is gone.
  std::optional<std::string_view> Read(HeldFile& file) {
    if (gone()) return std::nullopt;
    Result<std::string_view> r = file.Read(fs_, buf_);
    if (r.ok()) return *r;
    Fail(r.error());
    return std::nullopt;
  }

  void Fail(const Error& e) {
    if (IsGoneErrno(e.errno_value) && DirInode(dir_) != std::optional<ino_t>(inode_)) {
      gone_ = e.message;
    } else {
      errors_.push_back(e.message);
    }
  }

  void Unparseable(const std::string& path, std::string_view text) {
    errors_.push_back("parse " + path + ": unexpected value \"" + std::string(Trim(text)) + "\"");
  }

  void ReadCounters(CounterDir& dir, CounterValues& out) {
    if (dir.files.empty()) return;
    out = CounterValues(dir.names);
    for (std::size_t i = 0; i < dir.files.size(); ++i) ReadCounterFile(dir, i, out);
  }

  // hw counters from an RDMA netlink answer, for the names `dir` lists; a listed name the answer
  // lacks is read from its file.
  void SetCounters(CounterDir& dir, const std::vector<NldevHwCounter>& answer, CounterValues& out) {
    out = CounterValues(dir.names);
    const CounterValues::Names& names = *dir.names;
    for (const NldevHwCounter& c : answer) {
      auto it = std::lower_bound(names.begin(), names.end(), c.name);
      if (it != names.end() && *it == c.name) out.Set(static_cast<std::size_t>(it - names.begin()), c.value);
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (!out.value(i)) ReadCounterFile(dir, i, out);
    }
  }

 private:
  // Slot `i` of `out` from the counter file `i` of `dir`.
  void ReadCounterFile(CounterDir& dir, std::size_t i, CounterValues& out) {
    HeldFile& f = dir.files[i];
    std::optional<std::string_view> text = Read(f);
    if (!text) return;
    if (IsNotAvailableValue(*text)) return;  // "N/A (no PMA)": absent, not an error
    std::optional<std::uint64_t> v = ParseU64(*text);
    if (!v) {
      Unparseable(f.path(), *text);
      return;
    }
    out.Set(i, *v);
  }

  const NodeFs& fs_;
  std::string& buf_;
  std::vector<std::string>& errors_;
  const std::string& dir_;
  ino_t inode_;
  std::optional<std::string> gone_;
};

// Lists a directory of counter files. A missing directory is normal (bnxt_re and rxe have no
// counters/); other failures are reported and mark the layout incomplete.
CounterDir DiscoverCounterFiles(const NodeFs& fs, const std::string& dir, std::vector<std::string>& errors, bool& complete) {
  CounterDir out;
  auto names = fs.ListDir(dir);  // sorted, unique
  if (!names.ok()) {
    if (names.error().errno_value != ENOENT) {
      errors.push_back(names.error().message);
      complete = false;
    }
    return out;
  }
  out.files.reserve(names->size());
  auto shared_dir = std::make_shared<const std::string>(dir);
  for (const std::string& n : *names) out.files.emplace_back(shared_dir, n);
  out.names = std::make_shared<const CounterValues::Names>(std::move(*names));
  return out;
}

void DiscoverPort(const NodeFs& fs, PortLayout& p, std::vector<std::string>& errors, bool& complete) {
  auto attr = [&](std::string_view file) -> std::optional<HeldFile> {
    std::string path = p.dir + "/" + std::string(file);
    if (!AttributePresent(fs, path)) return std::nullopt;
    return HeldFile(std::move(path));
  };
  p.state = attr("state");
  p.phys_state = attr("phys_state");
  p.rate = attr("rate");
  p.link_layer = attr("link_layer");
  p.counters = DiscoverCounterFiles(fs, p.dir + "/counters", errors, complete);
  p.counters_ext = DiscoverCounterFiles(fs, p.dir + "/counters_ext", errors, complete);
  p.hw_counters = DiscoverCounterFiles(fs, p.dir + "/hw_counters", errors, complete);

  auto gids = fs.ListDir(p.dir + "/gids");
  if (!gids.ok()) {
    if (gids.error().errno_value != ENOENT) {
      errors.push_back(gids.error().message);
      complete = false;
    }
    return;
  }
  std::uint32_t size = 0;
  for (const std::string& n : *gids) {
    if (auto i = ParseIndex(n)) size = std::max(size, *i + 1);
  }
  p.has_gid_table = size > 0;
  p.gids_dir = p.dir + "/gids/";
  p.types_dir = p.dir + "/gid_attrs/types/";
  p.ndevs_dir = p.dir + "/gid_attrs/ndevs/";
  p.gid_slots.assign(size, GidSlot{});
  p.gid_files.resize(size);
}

Result<RdmaDevicesCollector::DeviceLayout> DiscoverDevice(const NodeFs& fs, const std::string& class_dir,
                                                          const std::string& name,
                                                          std::vector<std::string>& errors) {
  RdmaDevicesCollector::DeviceLayout d;
  d.name = name;
  d.dir = class_dir + "/" + name;
  d.dir_prefix = d.dir + "/";
  struct stat st {};
  if (::stat(d.dir.c_str(), &st) != 0) return Error::FromErrno("stat " + d.dir, errno);
  d.inode = st.st_ino;

  for (std::size_t i = 0; i < kDeviceAttrs.size(); ++i) {
    std::string path = d.dir_prefix + std::string(kDeviceAttrs[i].file);
    if (AttributePresent(fs, path)) d.attrs[i].emplace(std::move(path));
  }
  // The parent device (PCI function) and its NUMA node do not change while the device exists.
  if (auto link = fs.ReadLink(d.dir_prefix + "device"); link.ok()) {
    std::string_view target = *link;
    while (!target.empty() && target.back() == '/') target.remove_suffix(1);
    std::string_view base = target.substr(target.rfind('/') + 1);
    if (IsPciAddress(base)) d.pci_address = std::string(base);
  }
  if (auto numa = fs.ReadFile(d.dir_prefix + "device/numa_node"); numa.ok()) {
    if (auto v = ParseI64(*numa)) d.numa_node = static_cast<int>(*v);
  }

  auto ports = fs.ListDir(d.dir_prefix + "ports");
  if (!ports.ok()) {
    if (IsGoneErrno(ports.error().errno_value) && !fs.Exists(d.dir)) return ports.error();
    if (ports.error().errno_value != ENOENT) {
      errors.push_back(ports.error().message);
      d.complete = false;
    }
    return d;
  }
  for (const std::string& n : *ports) {
    auto num = ParseIndex(n);
    if (!num) continue;
    PortLayout& p = d.ports.emplace_back();
    p.port = *num;
    p.dir = d.dir_prefix + "ports/" + n;
    DiscoverPort(fs, p, errors, d.complete);
  }
  std::sort(d.ports.begin(), d.ports.end(), [](const PortLayout& a, const PortLayout& b) { return a.port < b.port; });
  return d;
}

void AppendIndex(std::string& buf, const std::string& dir, std::uint32_t index) {
  buf.assign(dir);
  char digits[16];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
  buf.append(digits, end);
}

// Reads the GID table window (or the whole table on a full rescan) into `port`.
void ReadGids(PortLayout& p, bool full_rescan, std::string& path_buf,
              DeviceReader& reader, std::vector<std::string>& errors, RdmaPortFacts& port) {
  if (!p.has_gid_table) return;
  const auto size = static_cast<std::uint32_t>(p.gid_slots.size());
  const bool full = full_rescan || !p.gid_table_scanned;
  const std::uint32_t window = std::min(size, std::max(p.gid_window, kMinGidWindow));
  const std::uint32_t end = full ? size : window;
  std::optional<std::uint32_t> highest;
  std::uint32_t roce_v2 = 0;
  std::string unheld;  // content of a read beyond the window
  for (std::uint32_t i = 0; i < end; ++i) {
    // `text` views the reader's buffer or `unheld`; both stay unchanged until the next slot.
    std::string_view text;
    if (i < window) {
      std::optional<HeldFile>& file = p.gid_files[i];
      if (!file) {
        AppendIndex(path_buf, p.gids_dir, i);
        file.emplace(path_buf);
      }
      std::optional<std::string_view> v = reader.Read(*file);
      if (reader.gone()) return;
      if (!v) continue;
      text = Trim(*v);
    } else {
      // Beyond the window: plain reads, so a full rescan does not pin hundreds of descriptors.
      AppendIndex(path_buf, p.gids_dir, i);
      auto v = reader.fs().ReadFile(path_buf);
      if (!v.ok()) {
        reader.Fail(v.error());
        if (reader.gone()) return;
        continue;
      }
      unheld = std::move(*v);
      text = Trim(unheld);
    }
    GidSlot& slot = p.gid_slots[i];
    if (IsZeroGid(text)) {
      slot = GidSlot{};
      continue;
    }
    highest = i;
    if (!slot.present || slot.gid != text) {
      // New or changed GID: its type and netdev are read once, then cached with the slot.
      slot = GidSlot{};
      slot.gid.assign(text);
      bool ok = true;
      AppendIndex(path_buf, p.types_dir, i);
      if (auto t = reader.fs().ReadFile(path_buf); t.ok()) {
        slot.type.assign(Trim(*t));
      } else {
        errors.push_back(t.error().message);
        ok = false;
      }
      if (port.IsEthernet()) {
        AppendIndex(path_buf, p.ndevs_dir, i);
        if (auto n = reader.fs().ReadFile(path_buf); n.ok()) {
          slot.ndev.assign(Trim(*n));
        } else {
          errors.push_back(n.error().message);
          ok = false;
        }
      }
      slot.present = ok;  // retry the attributes next time if they could not be read
    }
    if (ParseGidType(slot.type) == GidType::kRoceV2) ++roce_v2;
    if (port.netdev.empty() && !slot.ndev.empty()) port.netdev = slot.ndev;
    port.gids.push_back(RdmaGid{i, slot.gid, slot.type, slot.ndev});
  }
  // Everything past the window was zero when last read: the next GID the kernel adds lands at
  // or below highest + 1.
  p.gid_table_scanned = true;
  p.gid_window = highest ? *highest + 2 : 0;
  port.roce_v2_gid_count = roce_v2;
  // Slots that left the window (GIDs removed) need no descriptor any more.
  const std::uint32_t next_window = std::min(size, std::max(p.gid_window, kMinGidWindow));
  for (std::uint32_t i = next_window; i < window; ++i) p.gid_files[i].reset();
}

// Ports of one driver list the same counter files: share one name list between them (across
// devices too), so Render maps named counters once per distinct list instead of once per port.
void ShareEqualCounterNames(RdmaDevicesCollector::State& st, RdmaDevicesCollector::DeviceLayout& fresh) {
  std::vector<std::shared_ptr<const CounterValues::Names>> known;
  for (const auto& [name, d] : st.layouts) {
    if (&d == &fresh) continue;
    for (const PortLayout& p : d.ports) {
      for (const CounterDir* dir : {&p.counters, &p.counters_ext, &p.hw_counters}) {
        if (dir->names && std::find(known.begin(), known.end(), dir->names) == known.end()) {
          known.push_back(dir->names);
        }
      }
    }
  }
  for (PortLayout& p : fresh.ports) {
    for (CounterDir* dir : {&p.counters, &p.counters_ext, &p.hw_counters}) {
      if (!dir->names) continue;
      auto same = std::find_if(known.begin(), known.end(), [&](const auto& k) { return *k == *dir->names; });
      if (same != known.end()) {
        dir->names = *same;
      } else {
        known.push_back(dir->names);
      }
    }
  }
}

}  // namespace

RdmaDevicesCollector::RdmaDevicesCollector()
    : state_(std::make_unique<State>()),
      netlink_(std::make_unique<RdmaNetlinkStats>(std::make_unique<MnlRdmaTransport>())) {}

RdmaDevicesCollector::RdmaDevicesCollector(std::unique_ptr<RdmaNetlinkStats> netlink)
    : state_(std::make_unique<State>()), netlink_(std::move(netlink)), netlink_live_only_(false) {}
RdmaDevicesCollector::~RdmaDevicesCollector() = default;

std::size_t RdmaDevicesCollector::held_descriptors() const {
  std::size_t n = 0;
  auto count = [&](const std::optional<HeldFile>& f) { n += f && f->is_open(); };
  for (const auto& [name, d] : state_->layouts) {
    for (const auto& f : d.attrs) count(f);
    for (const PortLayout& p : d.ports) {
      for (const auto* f : {&p.state, &p.phys_state, &p.rate, &p.link_layer}) count(*f);
      for (const auto* dir : {&p.counters, &p.counters_ext, &p.hw_counters}) {
        for (const HeldFile& f : dir->files) n += f.is_open();
      }
      for (const auto& f : p.gid_files) count(f);
    }
  }
  return n;
}

Status RdmaDevicesCollector::Collect(const CollectContext& ctx, Snapshot& snapshot,
                                     CollectorOutcome& outcome) {
  State& st = *state_;
  if (st.sysfs_root != ctx.fs.sysfs_root()) {  // another tree: nothing cached applies
    st.ForgetAll();
    st.sysfs_root = ctx.fs.sysfs_root();
  }
  const bool full_gid_rescan = st.collections % kGidFullRescanInterval == 0;
  ++st.collections;
  RdmaNetlinkStats* netlink =
      netlink_ && (!netlink_live_only_ || NodeFs::IsLiveSysfsRoot(ctx.fs.sysfs_root())) ? netlink_.get() : nullptr;

  RdmaDevicesFacts facts;
  const std::string class_dir = ctx.fs.Sys("class/infiniband");
  auto names = ctx.fs.ListDir(class_dir);
  if (!names.ok()) {
    st.ForgetAll();
    if (names.error().errno_value == ENOENT) {  // no RDMA core loaded: zero devices, not a failure
      snapshot.Put(std::move(facts));
      return Status::Ok();
    }
    return names.error();
  }
  facts.class_dir_present = true;

  // Devices that left the listing (or the filter): close their descriptors.
  std::vector<std::string> wanted;
  wanted.reserve(names->size());
  for (std::string& n : *names) {
    if (ctx.config.devices.Matches(n)) wanted.push_back(std::move(n));
  }
  for (auto it = st.layouts.begin(); it != st.layouts.end();) {
    if (!std::binary_search(wanted.begin(), wanted.end(), it->first)) {
      it = st.layouts.erase(it);  // closes its descriptors
    } else {
      ++it;
    }
  }

  facts.devices.reserve(wanted.size());
  for (const std::string& name : wanted) {
    RdmaDeviceFacts dev;
    std::vector<std::string> errors;
    std::string gone_message;
    bool read_ok = false;
    // Second attempt only after the device turned out to be gone or re-created: rediscover it.
    for (int attempt = 0; attempt < 2 && !read_ok; ++attempt) {
      errors.clear();
      dev = RdmaDeviceFacts{};
      auto it = st.layouts.find(name);
      if (it != st.layouts.end() &&
          (!it->second.complete || DirInode(it->second.dir) != std::optional<ino_t>(it->second.inode))) {
        st.Forget(name);
        it = st.layouts.end();
      }
      if (it == st.layouts.end()) {
        auto layout = DiscoverDevice(ctx.fs, class_dir, name, errors);
        if (!layout.ok()) {
          gone_message = layout.error().message;
          continue;
        }
        it = st.layouts.emplace(name, std::move(*layout)).first;
        ShareEqualCounterNames(st, it->second);
      }
      DeviceLayout& d = it->second;
      DeviceReader reader(ctx.fs, st.read_buf, errors, d.dir, d.inode);
      dev.name = name;
      dev.numa_node = d.numa_node;
      dev.pci_address = d.pci_address;
      for (std::size_t i = 0; i < kDeviceAttrs.size() && !reader.gone(); ++i) {
        if (d.stable_values[i]) {
          dev.*kDeviceAttrs[i].member = d.stable_values[i];
          continue;
        }
        if (!d.attrs[i]) continue;
        if (auto v = reader.Read(*d.attrs[i])) {
          dev.*kDeviceAttrs[i].member = std::string(Trim(*v));
          if (kDeviceAttrs[i].stable) {
            d.stable_values[i] = dev.*kDeviceAttrs[i].member;
            d.attrs[i].reset();  // closes the descriptor
          }
        }
      }
      dev.ports.reserve(d.ports.size());
      for (PortLayout& p : d.ports) {
        if (reader.gone()) break;
        RdmaPortFacts& port = dev.ports.emplace_back();
        port.device = name;
        port.port = p.port;
        if (p.state) {
          if (auto v = reader.Read(*p.state)) {
            port.state = ParseSysfsEnum(*v);
            if (!port.state) reader.Unparseable(p.state->path(), *v);
          }
        }
        if (p.phys_state) {
          if (auto v = reader.Read(*p.phys_state)) {
            port.phys_state = ParseSysfsEnum(*v);
            if (!port.phys_state) reader.Unparseable(p.phys_state->path(), *v);
          }
        }
        if (p.rate) {
          if (auto v = reader.Read(*p.rate)) {
            port.rate_bytes_per_second = ParseIbRateBytesPerSecond(*v);
            if (!port.rate_bytes_per_second) reader.Unparseable(p.rate->path(), *v);
          }
        }
        if (p.link_layer_value) {
          port.link_layer = p.link_layer_value;
        } else if (p.link_layer) {
          if (auto v = reader.Read(*p.link_layer)) {
            port.link_layer = std::string(Trim(*v));
            p.link_layer_value = port.link_layer;
            p.link_layer.reset();
          }
        }
        reader.ReadCounters(p.counters, port.counters);
        reader.ReadCounters(p.counters_ext, port.counters_ext);
        if (netlink != nullptr && !p.hw_counters_from_files && !p.hw_counters.files.empty()) {
          if (auto answer = netlink->PortCounters(name, p.port)) {
            reader.SetCounters(p.hw_counters, *answer, port.hw_counters);
          } else {
            errors.push_back("hw_counters over RDMA netlink: " + answer.error().message +
                             "; reading the files for this port from now on");
            p.hw_counters_from_files = true;
            reader.ReadCounters(p.hw_counters, port.hw_counters);
          }
        } else {
          reader.ReadCounters(p.hw_counters, port.hw_counters);
        }
        ReadGids(p, full_gid_rescan, st.path_buf, reader, errors, port);
      }
      if (reader.gone()) {
        gone_message = reader.gone_message();
        st.Forget(name);
        continue;
      }
      read_ok = true;
    }
    if (!read_ok) {
      outcome.errors.push_back("device " + name + " skipped, it vanished while being read: " + gone_message);
      continue;
    }
    for (std::string& e : errors) outcome.errors.push_back(std::move(e));
    facts.devices.push_back(std::move(dev));
  }
  snapshot.Put(std::move(facts));
  return Status::Ok();
}

void RdmaDevicesCollector::Render(const Snapshot& snapshot, MetricSink& sink) const {
  const RdmaDevicesFacts* facts = snapshot.Get<RdmaDevicesFacts>();
  if (facts == nullptr) return;
  using prometheus::MetricType;

  sink.Gauge("rdma_devices_found", "RDMA devices found under /sys/class/infiniband after device filtering.")
      .Add({}, static_cast<double>(facts->devices.size()));

  auto info = sink.Family("rdma_device_info",
                  "RDMA device identity from /sys/class/infiniband/<device>; value is always 1.", MetricType::Gauge);
  for (const RdmaDeviceFacts& d : facts->devices) {
    auto label = [](const std::optional<std::string>& v) -> std::string_view {
      if (v) return *v;  // (not `v ? *v : ""`: that would view a temporary std::string)
      return {};
    };
    std::string node_type;
    if (d.node_type) {
      auto parsed = ParseSysfsEnum(*d.node_type);
      node_type = parsed ? parsed->name : *d.node_type;
    }
    info.Add({{"device", d.name},
              {"board_id", label(d.board_id)},
              {"firmware_version", label(d.fw_ver)},
              {"hca_type", label(d.hca_type)},
              {"node_guid", label(d.node_guid)},
              {"sys_image_guid", label(d.sys_image_guid)},
              {"node_type", node_type}},
             1);
  }

  // Port label strings, built once for all families.
  struct PortRef {
    const RdmaPortFacts* facts;
    std::string port;
  };
  std::vector<PortRef> ports;
  for (const RdmaDeviceFacts& d : facts->devices) {
    for (const RdmaPortFacts& p : d.ports) ports.push_back({&p, std::to_string(p.port)});
  }

  auto port_info = sink.Family("rdma_port_info",
                       "RDMA port link layer and the netdev behind it (from its RoCE GIDs); value is always 1.",
                       MetricType::Gauge);
  auto state = sink.Family("rdma_port_state_id",
                   "Port state (ports/P/state): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", MetricType::Gauge);
  auto phys = sink.Family("rdma_port_physical_state_id",
                  "Physical port state (ports/P/phys_state): 1 Sleep, 2 Polling, 3 Disabled, "
                  "4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.",
                  MetricType::Gauge);
  auto rate = sink.Family("rdma_port_rate_bytes_per_second", "Port signalling rate (ports/P/rate), bytes per second.",
                  MetricType::Gauge);
  auto roce_v2 = sink.Family("rdma_port_roce_v2_gids", "GIDs of type RoCE v2 in the port's GID table.",
                     MetricType::Gauge);
  for (const PortRef& r : ports) {
    const RdmaPortFacts& p = *r.facts;
    port_info.Add({{"device", p.device}, {"port", r.port}, {"link_layer", p.link_layer ? *p.link_layer : ""},
                   {"netdev", p.netdev}},
                  1);
  }
  for (const PortRef& r : ports) {
    if (r.facts->state) state.Add({{"device", r.facts->device}, {"port", r.port}}, r.facts->state->id);
  }
  for (const PortRef& r : ports) {
    if (r.facts->phys_state) phys.Add({{"device", r.facts->device}, {"port", r.port}}, r.facts->phys_state->id);
  }
  for (const PortRef& r : ports) {
    if (r.facts->rate_bytes_per_second) {
      rate.Add({{"device", r.facts->device}, {"port", r.port}}, static_cast<double>(*r.facts->rate_bytes_per_second));
    }
  }
  for (const PortRef& r : ports) {
    if (r.facts->roce_v2_gid_count) {
      roce_v2.Add({{"device", r.facts->device}, {"port", r.port}}, *r.facts->roce_v2_gid_count);
    }
  }

  // Named-counter slots per distinct name list (usually one list per driver and directory).
  std::vector<NamedSlots> named_memo;
  auto slots_for = [&](const auto& table, const CounterValues& values) -> const NamedSlots& {
    const CounterValues::Names* names = values.names().get();
    for (const NamedSlots& m : named_memo) {
      if (m.names == names) return m;
    }
    return named_memo.emplace_back(MapNamedSlots(table, *names));
  };
  // Computed for every port first: named_memo must not grow (and move) while references are held.
  std::vector<std::size_t> counters_slots(ports.size()), ext_slots(ports.size());
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  auto memo_index = [&](const auto& table, const CounterValues& values) -> std::size_t {
    if (!values.names()) return kNone;
    return static_cast<std::size_t>(&slots_for(table, values) - named_memo.data());
  };
  for (std::size_t i = 0; i < ports.size(); ++i) {
    counters_slots[i] = memo_index(kNamedCounters, ports[i].facts->counters);
    ext_slots[i] = memo_index(kNamedExtCounters, ports[i].facts->counters_ext);
  }

  auto render_named = [&](const auto& table, auto member, const std::vector<std::size_t>& memo_of_port) {
    for (std::size_t k = 0; k < std::size(table); ++k) {
      const NamedCounter& c = table[k];
      auto family = sink.Family(c.metric, c.help, MetricType::Counter);
      for (std::size_t i = 0; i < ports.size(); ++i) {
        if (memo_of_port[i] == kNone) continue;
        const std::optional<std::size_t>& slot = named_memo[memo_of_port[i]].slot_of[k];
        if (!slot) continue;
        const std::optional<std::uint64_t>& v = (ports[i].facts->*member).value(*slot);
        if (v) family.Add({{"device", ports[i].facts->device}, {"port", ports[i].port}}, static_cast<double>(*v) * c.scale);
      }
    }
  };
  render_named(kNamedCounters, &RdmaPortFacts::counters, counters_slots);
  render_named(kNamedExtCounters, &RdmaPortFacts::counters_ext, ext_slots);

  auto other = sink.Family("rdma_port_counters_total",
                   "Raw value of a counters/ or counters_ext/ file without a metric of its own.", MetricType::Counter);
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const RdmaPortFacts& p = *ports[i].facts;
    if (counters_slots[i] != kNone) {
      const NamedSlots& m = named_memo[counters_slots[i]];
      for (std::size_t s = 0; s < p.counters.slot_count(); ++s) {
        if (m.unnamed[s] && p.counters.value(s)) {
          other.Add({{"device", p.device}, {"port", ports[i].port}, {"counter", p.counters.name(s)}},
                    static_cast<double>(*p.counters.value(s)));
        }
      }
    }
    if (ext_slots[i] != kNone) {
      const NamedSlots& m = named_memo[ext_slots[i]];
      for (std::size_t s = 0; s < p.counters_ext.slot_count(); ++s) {
        if (m.unnamed[s] && p.counters_ext.value(s) && !p.counters.contains(p.counters_ext.name(s))) {
          other.Add({{"device", p.device}, {"port", ports[i].port}, {"counter", p.counters_ext.name(s)}},
                    static_cast<double>(*p.counters_ext.value(s)));
        }
      }
    }
  }
  auto hw = sink.Family("rdma_port_hw_counters_total",
                "Raw value of a ports/P/hw_counters/ file (driver-defined names).", MetricType::Counter);
  for (const PortRef& r : ports) {
    const CounterValues& values = r.facts->hw_counters;
    for (std::size_t s = 0; s < values.slot_count(); ++s) {
      if (values.value(s)) {
        hw.Add({{"device", r.facts->device}, {"port", r.port}, {"counter", values.name(s)}},
               static_cast<double>(*values.value(s)));
      }
    }
  }
}

RDMAHD_REGISTER_COLLECTOR("devices", RdmaDevicesCollector);

}  // namespace rdmahd
