#!/bin/sh
# Builds the libFuzzer targets with clang (-DRDMAHD_FUZZ=ON) and runs each for a bounded time.
# Usage: fuzz/run.sh [seconds-per-target]   (default 30; CI calls it as is)
# Exit status is non-zero when a build fails or a target finds a crash (the reproducer is left in
# the working directory as crash-*/leak-*/timeout-*).
set -eu
SECONDS_PER_TARGET=${1:-30}
SRC=$(cd "$(dirname "$0")/.." && pwd)
# Inside the checkout (ignored by git): a build folder shared with another checkout would hold a
# CMake cache for the wrong source tree.
BUILD=${RDMAHD_FUZZ_BUILD:-$SRC/build-fuzz}
TARGETS="dcb_netlink config handshake targets_file dns_answer"
# The decoders of parsers/.
TARGETS="$TARGETS rdma_nl_stats ethtool_stats dcb_json host_proc sysfs_text"
TARGETS="$TARGETS pcie_aer ethtool_std_stats ethtool_fec devlink_health module_eeprom kernel_log"
# The generic netlink answers the collectors parse before those decoders.
TARGETS="$TARGETS genl_reply"

cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DRDMAHD_FUZZ=ON >/dev/null
for t in $TARGETS; do ninja -C "$BUILD" -j2 "rdmahd_fuzz_$t"; done

for t in $TARGETS; do
  work=$(mktemp -d)            # new corpus entries go here, never into the repository
  echo "== fuzzing $t for ${SECONDS_PER_TARGET}s"
  "$BUILD/rdmahd_fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=8192 -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 "$work" "$SRC/fuzz/corpus/$t"
  rm -rf "$work"
done
