// Facts of the "roce" collector (collectors/roce_qos.h): the QoS configuration of the netdevs
// behind RDMA ports (PFC, trust, DSCP map, ECN/DCQCN). Data only.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "facts/dcb_state.h"

namespace rdmahd {

// The DCQCN parameter files of an ECN role folder. The names are listed with the folder and shared
// (immutable) by the collector's layout and every snapshot; a collection stores only the values, so
// it allocates nothing per file (32 netdevs have ~600 of these files).
class EcnParameters {
 public:
  using Names = std::vector<std::string>;  // sorted, unique

  EcnParameters() = default;
  explicit EcnParameters(std::shared_ptr<const Names> names)
      : names_(std::move(names)), values_(names_ ? names_->size() : 0) {}

  // Slot access (every listed name, read or not), in name order.
  std::size_t slot_count() const { return values_.size(); }
  const std::string& name(std::size_t slot) const { return (*names_)[slot]; }
  const std::optional<std::int64_t>& value(std::size_t slot) const { return values_[slot]; }
  void Set(std::size_t slot, std::int64_t v) { values_[slot] = v; }

  std::optional<std::int64_t> Find(std::string_view name) const;
  std::size_t count(std::string_view name) const { return Find(name) ? 1 : 0; }
  // Like std::map::at, for tests: throws std::out_of_range when `name` has no value.
  std::int64_t at(std::string_view name) const;

 private:
  std::shared_ptr<const Names> names_;
  std::vector<std::optional<std::int64_t>> values_;  // parallel to *names_
};

struct EcnRoleFacts {
  std::array<std::optional<bool>, kDcbPriorities> enabled;  // absent: no enable/N file
  EcnParameters parameters;                                 // other files of the role folder
  bool present = false;                                     // the role folder exists
};

struct RoceNetdevFacts {
  std::string netdev;
  std::string dcb_source;               // "netlink", the capture folder, or empty (not captured)
  std::optional<DcbState> dcb;          // absent: could not be read (dcb_note says why)
  std::string dcb_note;
  std::optional<TrustMode> trust;       // absent: unknown
  std::map<int, int> dscp_priority;     // DSCP -> priority from the APP table
  EcnRoleFacts ecn_np;                  // notification point (receiver: marks CNPs)
  EcnRoleFacts ecn_rp;                  // reaction point (sender: slows down on CNPs)
};

struct RoceQosFacts {
  std::vector<RoceNetdevFacts> netdevs;  // sorted by name
  const RoceNetdevFacts* Find(const std::string& netdev) const;
};

}  // namespace rdmahd
