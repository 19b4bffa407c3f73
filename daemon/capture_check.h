// `rdma-healthd check --capture FILE`: a support bundle judged on any machine (README "Analysing a
// captured node"). The bundle is hostile input: it is extracted into a private temporary folder
// (daemon/capture_archive.h, ExtractCapture), read only through the --path.* flags pointed into it,
// removed on every exit (signals and the deadline's _Exit included), judged incomplete when its
// manifest says its capture was cut, and never named in what is printed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "daemon/capture_archive.h"
#include "daemon/options.h"

namespace rdmahd {

// `check --capture FILE`: extracts FILE into a private temporary folder (hostile input:
// ExtractCapture) and points `options`' --path.* flags (and --config.file, unless given) at it.
// The folder lives as long as the returned TempDir.
Result<TempDir> OpenCaptureForCheck(Options& options);

// When `collector` is non-empty (a collector is still running past the collection's deadline):
// removes `extraction` (when given), logs, flushes stdio and leaves through _Exit(exit_code),
// running no destructor under the worker that still uses what they would free. Returns otherwise.
void LeaveIfACollectorIsStillRunning(const std::string& collector, int exit_code,
                                     std::optional<TempDir>* extraction = nullptr);

// The folder OpenCaptureForCheck extracted the bundle to, as `options` name it after it; empty
// when `options` judge no bundle. That folder is gone when the command ends: nothing printed names it.
std::string ExtractedCaptureRoot(const Options& options);

// Why a bundle extracted at `root` cannot be judged as a whole: its manifest.json says that the
// capture stopped at one of its own limits (CaptureLimits: entries, total bytes, time), so what it
// left out is missing (the limits, how many paths, and the node's own exit code are named). Also
// when manifest.json is there but unreadable or not JSON. Nothing when there is no manifest.json
// or it says the bundle is complete.
std::optional<std::string> IncompleteCaptureProblem(const std::string& root);

// `text` with every path under `root` (the extracted bundle) written relative to the bundle:
// "ROOT/kernel-log.txt" -> "kernel-log.txt", "ROOT/config/config.yaml" -> "config/config.yaml",
// ROOT itself -> "the bundle". `root` as given and as it resolves (realpath) are both replaced.
std::string BundleRelative(std::string_view text, const std::string& root);

}  // namespace rdmahd
