// Facts of the "roce" collector (collectors/roce_qos.h): the QoS configuration of the netdevs
// behind RDMA ports (PFC, trust, DSCP map, ECN/DCQCN). Data only.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "facts/dcb_state.h"
#include "facts/named_values.h"

namespace rdmahd {

// The DCQCN parameter files of an ECN role folder: the names are listed with the folder; a value is
// nullopt when its file was unreadable or not a number.
using EcnParameters = NamedValues<std::int64_t>;

struct EcnRoleFacts {
  std::array<std::optional<bool>, kDcbPriorities> enabled;  // absent: no enable/N file
  EcnParameters parameters;                                 // other files of the role folder
  bool present = false;                                     // the role folder exists
};

struct RoceNetdevFacts {
  std::string netdev;
  // Null: could not be read (dcb_note says why). Immutable, and shared by the collections that read
  // the same capture.
  std::shared_ptr<const DcbState> dcb;
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
