#include "collectors/gid_table.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <memory>
#include <optional>

#include "common/parse.h"
#include "parsers/ib_sysfs_parse.h"

namespace rdmahd {
namespace {

// "0", "1", ... "1023": the names of a GID table's slots, shared by every table's held files (a
// slot past them is held by its path).
const std::shared_ptr<const NameList>& SlotNames() {
  static const auto names = [] {
    NameList n;
    for (int i = 0; i < 1024; ++i) n.push_back(std::to_string(i));
    return std::make_shared<const NameList>(std::move(n));
  }();
  return names;
}

// `buf` = dir + sub + index, e.g. ".../ports/1/" "gids/" "3".
void AppendIndex(std::string& buf, const std::string& dir, std::string_view sub, std::uint32_t index) {
  buf.assign(dir).append(sub);
  char digits[16];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, index);
  buf.append(digits, end);
}

}  // namespace

GidTable GidTable::Discover(const NodeFs& fs, const std::string& port_dir, std::vector<std::string>& errors,
                            bool& complete) {
  GidTable t;
  auto gids = fs.ListDir(port_dir + "/gids");
  if (!gids.ok()) {
    if (gids.error().errno_value != ENOENT) {
      errors.push_back(gids.error().message);
      complete = false;
    }
    return t;
  }
  std::uint32_t size = 0;
  for (const std::string& n : *gids) {
    if (auto i = ParseSysfsIndex(n)) size = std::max(size, *i + 1);
  }
  t.size_ = size;
  t.port_dir_ = port_dir + "/";
  t.gids_ = HeldFile::MakeFolder(port_dir + "/gids", SlotNames());
  return t;
}

void GidTable::RefreshAttributes() { refresh_ = true; }

std::size_t GidTable::held_descriptors() const {
  std::size_t n = 0;
  for (const auto& f : files_) n += f && f->is_open();
  return n;
}

void GidTable::Read(bool full_rescan, std::string& path_buf, DeviceReader& reader, std::vector<std::string>& errors,
                    TopologyPort& port) {
  if (size_ == 0) return;
  const std::uint32_t size = size_;
  const bool full = full_rescan || !scanned_;
  const std::uint32_t window = std::min(size, std::max(window_, kMinWindow));
  if (files_.size() < window) files_.resize(window);
  const std::uint32_t end = full ? size : window;
  std::optional<std::uint32_t> highest;
  std::uint32_t roce_v2 = 0;
  std::string unheld;  // content of a read beyond the window
  // The GIDs read are compared with the last list as they come; a new list is made from the first
  // difference on, so an unchanged table allocates nothing and its list stays shared.
  std::size_t same = 0;  // GIDs so far equal to the last list's first ones
  std::optional<std::vector<RdmaGid>> fresh;
  const auto add = [&](std::uint32_t index, const std::array<std::uint8_t, 16>& gid, std::string_view type,
                       std::string_view ndev) {
    if (!fresh && same < list_.size()) {
      const RdmaGid& g = list_[same];
      if (g.index == index && g.gid == gid && g.type == type && g.ndev == ndev) {
        ++same;
        return;
      }
    }
    if (!fresh) fresh.emplace(list_.begin(), list_.begin() + same);
    fresh->push_back(RdmaGid{index, gid, std::string(type), std::string(ndev)});
  };
  std::size_t known = 0;             // the last list's first entry at or past the slot being read
  std::vector<std::uint32_t> retry;  // slots whose attributes could not be read now
  std::string type, ndev;            // a new or changed GID's, as read
  for (std::uint32_t i = 0; i < end; ++i) {
    // `text` views the reader's buffer or `unheld`; both stay unchanged until the next slot.
    std::string_view text;
    if (i < window) {
      std::optional<HeldFile>& file = files_[i];
      if (!file && i < SlotNames()->size()) {
        file.emplace(gids_, i);
      } else if (!file) {  // past the shared names: held by its path
        AppendIndex(path_buf, port_dir_, "gids/", i);
        file.emplace(path_buf);
      }
      std::optional<std::string_view> v = reader.Read(*file);
      if (reader.gone()) return;
      if (!v) continue;
      text = Trim(*v);
    } else {
      // Beyond the window: plain reads, so a full rescan does not pin hundreds of descriptors.
      AppendIndex(path_buf, port_dir_, "gids/", i);
      auto v = reader.fs().ReadFile(path_buf);
      if (!v.ok()) {
        reader.Fail(v.error());
        if (reader.gone()) return;
        continue;
      }
      unheld = std::move(*v);
      text = Trim(unheld);
    }
    if (IsZeroGid(text)) continue;
    highest = i;  // not zero: the window covers it
    const auto gid = ParseGid(text);
    if (!gid) {  // not as the kernel prints a GID: the slot cannot be judged
      AppendIndex(path_buf, port_dir_, "gids/", i);
      errors.push_back(path_buf + ": not a GID (eight groups of four hex digits)");
      continue;
    }
    while (known < list_.size() && list_[known].index < i) ++known;
    const RdmaGid* last = known < list_.size() && list_[known].index == i ? &list_[known] : nullptr;
    std::string_view slot_type, slot_ndev;
    if (last != nullptr && last->gid == *gid && !refresh_ &&
        std::find(retry_.begin(), retry_.end(), i) == retry_.end()) {
      slot_type = last->type;  // the same GID: its type and netdev as read before
      slot_ndev = last->ndev;
    } else {
      // New or changed GID (or a refresh): its type and netdev are read once, then kept in the list.
      type.clear();
      ndev.clear();
      bool ok = true;
      AppendIndex(path_buf, port_dir_, "gid_attrs/types/", i);
      if (auto t = reader.fs().ReadFile(path_buf); t.ok()) {
        type.assign(Trim(*t));
      } else {
        errors.push_back(t.error().message);
        ok = false;
      }
      if (port.IsEthernet()) {
        AppendIndex(path_buf, port_dir_, "gid_attrs/ndevs/", i);
        if (auto n = reader.fs().ReadFile(path_buf); n.ok()) {
          ndev.assign(Trim(*n));
        } else {
          errors.push_back(n.error().message);
          ok = false;
        }
      }
      if (!ok) retry.push_back(i);  // read the attributes again next time
      slot_type = type;
      slot_ndev = ndev;
    }
    if (ParseGidType(slot_type) == GidType::kRoceV2) ++roce_v2;
    if (port.netdev.empty() && !slot_ndev.empty()) port.netdev = std::string(slot_ndev);
    add(i, *gid, slot_type, slot_ndev);
  }
  refresh_ = false;
  retry_ = std::move(retry);
  if (!fresh && same != list_.size()) fresh.emplace(list_.begin(), list_.begin() + same);  // GIDs removed
  if (fresh) {
    fresh->shrink_to_fit();
    list_ = GidList(std::make_shared<const std::vector<RdmaGid>>(std::move(*fresh)));
  }
  port.gids = list_;
  // Everything past the window was zero when last read: the next GID the kernel adds lands at
  // or below highest + 1.
  scanned_ = true;
  window_ = highest ? *highest + 2 : 0;
  port.roce_v2_gid_count = roce_v2;
  // Slots that left the window (GIDs removed) need no descriptor.
  const std::uint32_t next_window = std::min(size, std::max(window_, kMinWindow));
  if (files_.size() > next_window) {
    files_.resize(next_window);
    files_.shrink_to_fit();
  }
}

}  // namespace rdmahd
