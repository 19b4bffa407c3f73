// DcbState: a netdev's DCB (IEEE 802.1Qaz/Qbb) configuration as the kernel reports it, whichever way
// it was read (DCB netlink, or captured `dcb -j` JSON). Absent parts are unknown, never "off".
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rdmahd {

inline constexpr int kDcbPriorities = 8;           // IEEE_8021QAZ_MAX_TCS
inline constexpr std::uint8_t kAppSelectorEthertype = 1;  // IEEE_8021QAZ_APP_SEL_ETHERTYPE
inline constexpr std::uint8_t kAppSelectorDscp = 5;       // IEEE_8021QAZ_APP_SEL_DSCP
inline constexpr std::uint8_t kAppSelectorPcp = 255;      // DCB_APP_SEL_PCP (Linux >= 6.2)

// struct ieee_pfc, decoded.
struct PfcConfig {
  std::uint8_t pfc_cap = 0;       // how many traffic classes may have PFC at once
  std::uint8_t enabled_mask = 0;  // bit p set = PFC enabled on priority p
  bool macsec_bypass = false;
  std::uint16_t delay = 0;        // bit times
  // PFC frames sent (requests) / received (indications) per priority; absent when the source has
  // none (JSON captured without -s).
  std::optional<std::array<std::uint64_t, kDcbPriorities>> requests;
  std::optional<std::array<std::uint64_t, kDcbPriorities>> indications;

  bool Enabled(int priority) const { return (enabled_mask >> priority) & 1; }
};

// struct dcb_app.
struct DcbAppEntry {
  std::uint8_t selector = 0;
  std::uint16_t protocol = 0;  // DSCP value for selector 5
  std::uint8_t priority = 0;
  bool operator==(const DcbAppEntry&) const = default;
};

struct DcbState {
  // false: the driver has no DCB at all (the kernel answered EOPNOTSUPP). Everything else is then
  // absent and means "unknown", not "off".
  bool supported = true;
  std::optional<PfcConfig> pfc;                    // absent: no IEEE PFC attribute in the reply
  std::optional<std::vector<DcbAppEntry>> app;     // absent: no APP table attribute
  std::optional<std::vector<std::uint8_t>> app_trust;  // selectors in trust order (Linux >= 6.2 and
                                                       // a driver implementing apptrust)
  std::optional<std::uint8_t> dcbx;                // DCB_CAP_DCBX_* flags
};

// DSCP -> priority entries of the APP table (selector DSCP), in DSCP order.
std::map<int, int> DscpPriorityMap(const DcbState& state);

}  // namespace rdmahd
