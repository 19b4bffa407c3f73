// `rdma-healthd check`: one collection, every check, a table, JSON or a summary line on stdout, and the
// node-problem-detector exit convention: 0 all ok, 1 a check failed, 2 could not run.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/collection_engine.h"
#include "daemon/options.h"

namespace rdmahd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitCouldNotRun = 2;

// The exit code a report deserves: 1 when a check failed (or warned, with fail_on_warning), else 2
// when a collector failed outright or `problems` says why the node cannot be judged (health cannot
// be vouched for), else 0.
int CheckExitCode(const Report& report, bool fail_on_warning, const std::vector<std::string>& problems = {});

// `problems`: reasons the node cannot be judged besides collector failures (SysfsRootProblem).
// Every field and message is printed through TerminalText (common/excerpt.h).
void PrintCheckTable(const Report& report, std::ostream& out, const std::vector<std::string>& problems = {});
void PrintCheckJson(const Report& report, int exit_code, std::ostream& out,
                    const std::vector<std::string>& problems = {});

// The most bytes of CheckSummaryLine.
inline constexpr std::size_t kCheckSummaryBytes = 240;

// `check --output=summary`: one line of printable ASCII, at most kCheckSummaryBytes, for
// node-problem-detector's condition message: the verdict ("RDMA unhealthy: 2 failed, 1 warning"),
// then what failed and warned as "check subject", worst first, as many as fit ("+N more"); for exit
// code 2, why the node could not be judged.
std::string CheckSummaryLine(const Report& report, int exit_code, const std::vector<std::string>& problems = {});

// What `check` prints on stdout, besides the error on stderr, when it cannot run at all (exit 2: a
// bad flag, a config file missing or invalid): node-problem-detector takes a plug-in's message from
// stdout only. "RDMA health unknown: " and the first line of `message` (without a leading
// "rdma-healthd: "), printable ASCII, at most kCheckSummaryBytes.
std::string CheckCouldNotRunLine(std::string_view message);

// Whether the command line runs the `check` subcommand (an argument "check" before any "--").
bool InvokesCheck(int argc, const char* const* argv);

// Runs the whole command with `engine` (over the options' paths); returns the process exit code.
// The collection waits at most the config's scrape.collection_timeout.
int RunCheckCommand(const Options& options, CollectionEngine& engine, std::ostream& out, std::ostream& err);

}  // namespace rdmahd
