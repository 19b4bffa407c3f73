// devlink health reporters: the answer to DEVLINK_CMD_HEALTH_REPORTER_GET (generic netlink family
// "devlink", linux/devlink.h), what `devlink health show` prints. mlx5 registers "fw" and
// "fw_fatal" per PCI function and "tx" and "rx" per port (those carry DEVLINK_ATTR_PORT_INDEX).
//
// One message = the device handle (DEVLINK_ATTR_BUS_NAME "pci", DEVLINK_ATTR_DEV_NAME
// "0000:af:00.0"), an optional port index, and a DEVLINK_ATTR_HEALTH_REPORTER nest with the
// reporter's name, state (0 healthy, 1 error: the kernel's enum devlink_health_reporter_state,
// which is not in the uapi header), error and recovery counts, and, when the reporter has them,
// its recovery settings (graceful period in ms, auto recover), auto dump, and the time of its last
// dump: DUMP_TS in ms since boot (jiffies) and DUMP_TS_NS in ns since the epoch. devlink keeps no
// "last error time"; with auto dump on, the last dump is taken at the last error.
//
// The decoded reporter (DevlinkHealthReporter) is data the facts hold: facts/devlink_health_facts.h.
//
// Pure decoder: the caller resolves the family id, sends the request (one reporter, or a dump of
// all) and hands each datagram over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/netlink_parse.h"
#include "common/result.h"
#include "facts/devlink_health_facts.h"

namespace rdmahd {

// "healthy", "error", "unknown": as `devlink health show` prints the state.
const char* DevlinkHealthStateName(DevlinkHealthState state);

// Names are identifiers the kernel and drivers choose: at most this many bytes of printable ASCII.
inline constexpr std::size_t kDevlinkMaxNameBytes = 64;
// A dump of more reporters than this is not from a real host (mlx5: 4 per function).
inline constexpr std::size_t kDevlinkMaxReporters = 4096;

// One DEVLINK_CMD_HEALTH_REPORTER_GET message. Malformed (EBADMSG, "devlink netlink
// HEALTH_REPORTER_GET reply malformed: ..."): truncation; no bus or device name; no reporter nest
// or a nest without name, state, error count or recover count; an attribute shorter than its type
// (u8, u32, u64); a name longer than kDevlinkMaxNameBytes or with a byte outside printable ASCII.
// Unknown attributes (newer kernels) are skipped.
Result<DevlinkHealthReporter> ParseDevlinkHealthReporter(const GenlMessage& message);

// The answer to a request for one reporter; a kernel error (ENOENT, EOPNOTSUPP) keeps its errno.
Result<DevlinkHealthReporter> ParseDevlinkHealthReporterReply(std::span<const std::uint8_t> datagram,
                                                              std::uint16_t family_id, std::uint32_t expected_seq = 0);

// One datagram of a dump of every reporter: appends its reporters to `out` and returns true once
// the dump's NLMSG_DONE is seen. More than kDevlinkMaxReporters in `out` is malformed. A kernel
// without devlink devices answers with NLMSG_DONE alone: true and nothing appended.
Result<bool> ParseDevlinkHealthReporterDump(std::span<const std::uint8_t> datagram, std::uint16_t family_id,
                                            std::vector<DevlinkHealthReporter>& out);

}  // namespace rdmahd
