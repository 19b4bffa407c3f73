// Forward error correction of a netdev: the reply to ETHTOOL_MSG_FEC_GET
// (linux/ethtool_netlink.h, ETHTOOL_A_FEC_*), with its statistics when the request set
// ETHTOOL_FLAG_STATS; and the same counters from mlx5's `ethtool -S` names where netlink has none.
//
// ETHTOOL_A_FEC_ACTIVE is a link-mode bit (ETHTOOL_LINK_MODE_FEC_NONE_BIT for "off", _RS_BIT,
// _BASER_BIT, _LLRS_BIT), absent when the driver reports no active mode. Each of
// ETHTOOL_A_FEC_STAT_CORRECTED, _UNCORR and _CORR_BITS is an array of u64: element 0 the total,
// then one element per lane when the driver counts per lane (the kernel sums the lanes into the
// total); an empty or absent array means the driver does not count it. mlx5 counts per lane in
// Base-R (FC) mode only: in RS mode a codeword spans the lanes, so there is only the total.
// ETHTOOL_A_FEC_MODES (configured modes) and the newer histogram are not decoded.
//
// The decoded reply (EthtoolFec) is data the facts hold: facts/fec_facts.h.
//
// Pure decoders over bytes and name/value pairs; the caller does the I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "facts/fec_facts.h"

namespace rdmahd {

// "off", "rs", "baser", "llrs", "other".
std::string_view FecModeName(FecMode mode);

// The kernel's ETHTOOL_MAX_LANES: arrays longer than 1 + this are not from a kernel.
inline constexpr std::size_t kFecMaxLanes = 8;

// Decodes the answer to one ETHTOOL_MSG_FEC_GET request. A kernel error (EOPNOTSUPP: the driver
// has no FEC, as veth and most virtual NICs) is an Error with that errno. Malformed (EBADMSG):
// truncation, ACTIVE not a u32, AUTO not a u8, a statistics array whose length is not a multiple
// of 8 or longer than 1 + kFecMaxLanes elements, or whose lanes do not add up to its total (the
// kernel computes the total as their sum; wrap-around is allowed).
Result<EthtoolFec> ParseEthtoolFecReply(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                        std::uint32_t expected_seq = 0);

// The FEC counters mlx5 exposes in `ethtool -S` (kernels or drivers without FEC netlink stats):
// rx_corrected_bits_phy (corrected bits, total) and rx_err_lane_<N>_phy (corrected bits of lane N,
// N < kFecMaxLanes). Other names are ignored. When the total is missing but lanes are present,
// the total is their sum. Absent when neither name is there.
std::optional<FecCounter> CorrectedBitsFromDriverStats(
    std::span<const std::pair<std::string_view, std::uint64_t>> stats);

// An estimate of the bit error ratio before FEC over an interval:
//   corrected_bits_delta / (link_speed_bps * seconds)
// Assumptions: the link ran at `link_speed_bps` (the netdev's speed, e.g. 100e9) for the whole
// interval; the counter counts bits the FEC corrected (corrected_bits, not blocks); the wire
// carries slightly more bits than the data rate (64b/66b or 256b/257b coding plus FEC parity, a
// few per cent), so the estimate is a few per cent high, on the safe side; bits in uncorrectable
// codewords are not counted, so with uncorrectable blocks rising the true ratio is higher still.
// Absent for a zero or negative interval or speed.
std::optional<double> EstimatePreFecBer(std::uint64_t corrected_bits_delta, double seconds, double link_speed_bps);

}  // namespace rdmahd
