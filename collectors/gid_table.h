// GidTable: one port's GID table (ports/P/gids/N with gid_attrs/types/N and gid_attrs/ndevs/N),
// read through a window so that a scrape does not read 255+ mostly-zero slots per port.
//
// Each read covers slots 0..(highest non-zero + 1), at least 0..2: the kernel puts a new GID in the
// lowest free slot (the first slots are reserved for the default GIDs), so that window sees every
// addition and removal. Slots in the window are HeldFiles. types/N and ndevs/N are read only for
// non-zero GIDs, and again only when the GID in that slot changed or RefreshAttributes() was called
// (a netdev renamed under an unchanged GID). A full rescan (plain reads, nothing held) covers the
// whole table, as a safety net for drivers that fill slots differently.
//
// Memory follows the GIDs in use, not the table's size: an mlx5 port lists 255 slots (gid_tbl_len),
// of which a few are set, and an SR-IOV host has thousands of ports. Slots past the highest non-zero
// one and descriptors past the window are not kept.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/device_reader.h"
#include "common/held_files.h"
#include "common/node_fs.h"
#include "core/topology.h"

namespace rdmahd {

class GidTable {
 public:
  // The first slots are reserved for default GIDs (one per GID type, 2 on RoCE); a non-default GID
  // added to an empty table lands right after them.
  static constexpr std::uint32_t kMinWindow = 3;

  GidTable() = default;
  // Sizes the table of the port at `port_dir` from its gids/ listing. A port without gids/ has no
  // table (normal); other listing errors go to `errors` and clear `complete`.
  static GidTable Discover(const NodeFs& fs, const std::string& port_dir, std::vector<std::string>& errors,
                           bool& complete);

  // Reads the window (the whole table when `full_rescan` or on the first read) into `port`: its
  // gids, roce_v2_gid_count and netdev (the lowest-index GID's; ndevs are read only when
  // `port.IsEthernet()`). Stops early when `reader` finds the device gone.
  void Read(bool full_rescan, std::string& path_buf, DeviceReader& reader, std::vector<std::string>& errors,
            TopologyPort& port);
  // The next Read re-reads the type and netdev of every non-zero GID.
  void RefreshAttributes();

  std::size_t held_descriptors() const;
  // GIDs remembered between reads (the table's memory): the non-zero ones, in the shared list.
  std::size_t gids_kept() const { return list_.size(); }

 private:
  std::uint32_t size_ = 0;  // slots in the table (0: no table)
  std::string port_dir_;    // with trailing '/': slot N is gids/N, gid_attrs/types/N, gid_attrs/ndevs/N under it
  std::shared_ptr<const HeldFile::Folder> gids_;  // gids/, for the window's held files (slots named "0", "1", ...)
  std::vector<std::optional<HeldFile>> files_;    // the window's: [0, window)
  // A GID's type and netdev are those of the list's entry for its slot while the slot's GID is the
  // same; read again for every GID after RefreshAttributes(), and for the slots listed here, whose
  // attributes could not be read last time (usually none).
  bool refresh_ = false;
  std::vector<std::uint32_t> retry_;
  std::uint32_t window_ = 0;                      // slots read every time: [0, window_)
  GidList list_;  // the non-zero GIDs as last read, shared with the ports read since
  bool scanned_ = false;
};

}  // namespace rdmahd
