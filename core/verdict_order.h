// Verdict order: how every surface (the status page, `check`'s table and JSON, `--output=summary`)
// lists verdicts. Worst status first (failed, warning, unknown, ok); within a status, by what the
// problem costs: hardware dead or fatal before degrading before configuration (CheckCost). Within a
// status, identical verdicts on several subjects are one group ("four roce_tos rows with the same
// reason become one row naming four ports").
//
// The cost of every check is in one table (verdict_order.cc); a check added without a place in it
// ranks as degrading and a unit test names it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/verdict_list.h"

namespace rdmahd {

// What a check's problem costs, costliest first.
enum class CheckCost {
  kHardware = 0,       // hardware dead or fatal: a NIC's fatal error, a device or port gone or down
  kDegrading = 1,      // working but degraded: error rates, link flaps, optics, FEC, AER, PCIe, peers
  kConfiguration = 2,  // configuration and host settings: PFC, ECN, ToS, MTU, trust, modules, limits
};

std::string_view CheckCostName(CheckCost cost);  // "hardware", "degrading", "configuration"

// The cost of check `check`'s problems; a check the table does not name is kDegrading.
CheckCost CostOfCheck(std::string_view check);
// Whether the table names `check` (tests: every registered check has its place).
bool CheckCostKnown(std::string_view check);
// The check's place in the order: lower first. Every check of a costlier tier comes before every
// check of a cheaper one; within a tier the table's order (the worse first), then the checks the
// table does not name.
int CheckRank(std::string_view check);

// Verdict statuses, worst first: failed 0, warning 1, unknown 2, ok 3.
int StatusRank(Verdict v);

// The positions of `verdicts` in surface order: status, then CheckRank, then check name, then as
// they were (a check's subjects keep the order the check gave them).
std::vector<std::size_t> OrderVerdicts(const VerdictList& verdicts);

// Verdicts of one status and check that say the same thing of several subjects.
struct VerdictGroup {
  Verdict verdict = Verdict::kUnknown;
  std::string check;
  std::vector<std::string> subjects;  // in the order of `members`
  std::vector<std::size_t> members;   // positions in the list, at least one
  // The members' reason and fix: as the verdict says it when there is one member or every member
  // says it word for word, else with each member's subject written <port> (a subject such as
  // "mlx5_0/1") or <subject>, and the device of a port subject written <device>.
  std::string reason;
  std::string fix;
};

// The verdicts grouped, groups in surface order (status, CheckRank, check name, first member).
// Two verdicts are one group when status and check are the same and their reasons and fixes are
// the same once each one's own subject (and the device of a "device/port" subject) is written as
// a placeholder. Subjects of fewer than 3 characters are never replaced.
std::vector<VerdictGroup> GroupVerdicts(const VerdictList& verdicts);

// `text` with `subject` (and, for "device/port" subjects, the device) written as placeholders
// where it stands as a whole name (not inside a longer name: "mlx5_1" in "mlx5_10" is left).
std::string WithSubjectPlaceholders(std::string_view text, std::string_view subject);

}  // namespace rdmahd
