#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs the whole test suite:
#   1. release build, unit + golden + end-to-end tests (ctest)
#   2. the same suite under AddressSanitizer + UBSan
#   3. clang's thread-safety analysis (scripts/thread_safety.sh), then the threaded tests under
#      ThreadSanitizer
#   4. fuzz targets for a bounded time
#   5. the Soft-RoCE VM tier (real RoCEv2 under QEMU); skipped with a reason when QEMU or the kernel
#      cannot be had, unless RDMAHD_REQUIRE_VM=1 (CI sets it)
#   6. README's first command on a fresh Debian 12 (a debootstrapped chroot, tests/fresh); needs
#      root and the Debian archive: skipped with a reason without them, unless
#      RDMAHD_REQUIRE_FRESH=1 (CI sets it)
# Exits non-zero on any failure. RDMAHD_TEST_TIERS="unit asan tsan fuzz vm fresh" selects tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
TIERS=${RDMAHD_TEST_TIERS:-"unit asan tsan fuzz vm fresh"}
JOBS=${RDMAHD_JOBS:-$(nproc)}
has() { [[ " $TIERS " == *" $1 "* ]]; }

scripts/install-deps.sh build test
has vm && scripts/install-deps.sh vm
if has fresh && [[ $(id -u) -eq 0 ]]; then scripts/install-deps.sh fresh; fi

step() { printf '\n==== %s ====\n' "$*"; }

# Compiler output is cached across runs (ccache, under ~/.cache so that it outlives the checkout). The
# base dir makes the cached paths relative to the checkout: a fresh clone elsewhere hits the cache
# that another clone filled. CMake (>= 3.17) takes the launcher from the environment for each build
# folder it configures anew, fuzz/run.sh's clang build included; an existing folder keeps its own.
if command -v ccache >/dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-6G}
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  ccache --zero-stats >/dev/null
  trap 'echo "ccache (this run):"; ccache --show-stats | grep -E "^ *(Hits|Misses|Cache size)" || true' EXIT
fi

if has unit; then
  step "release build + tests"
  # Release: the optimisation level scripts/run-daemon.sh and the .deb ship is the one tested.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build -j "$JOBS"
  (cd build && ctest --output-on-failure -j "$JOBS" -LE 'vm')
fi

if has asan; then
  step "AddressSanitizer + UBSan"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRDMAHD_SANITIZE=address,undefined >/dev/null
  ninja -C build-asan -j "$JOBS"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "$JOBS" -LE 'vm')
fi

if has tsan; then
  step "ThreadSanitizer (threaded parts)"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DRDMAHD_SANITIZE=thread >/dev/null
  # What the locks guard, checked at compile time (GUARDED_BY, REQUIRES: common/mutex.h); TSan
  # below sees only the interleavings the tests happen to run.
  scripts/thread_safety.sh build-tsan
  ninja -C build-tsan -j "$JOBS"
  # The threaded parts: the scrape cache shared by concurrent scrapes, the HTTP server's worker
  # threads, the verdict tracker, the whole daemon serving scrapes while it reloads, and the
  # collection worker with its deadline (engine, daemon shutdown, `check`), and the HTTP server and
  # the daemon's lifecycle as processes (HttpE2E, LifecycleE2E run the TSan-built binary).
  (cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     ctest --output-on-failure -j "$JOBS" -R 'CollectionEngine|ProbeScheduler|HttpServer|VerdictTracker|Daemon|CheckCommand|HttpE2E|LifecycleE2E|ApiE2E|KernelLog')
fi

if has fuzz && [[ -x fuzz/run.sh ]]; then
  step "fuzz targets (bounded)"
  fuzz/run.sh
fi

if has vm; then
  step "Soft-RoCE VM tier"
  [[ -d build ]] || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null; ninja -C build -j "$JOBS"; }
  (cd build && ctest --output-on-failure -L 'vm')
fi
if has fresh; then
  step "fresh machine: README's first command in a debootstrapped Debian 12"
  if [[ $(id -u) -eq 0 ]]; then
    tests/fresh/fresh-machine-test.sh
  elif [[ ${RDMAHD_REQUIRE_FRESH:-0} == 1 ]]; then
    echo "fresh tier: needs root (debootstrap, chroot, mounts) and RDMAHD_REQUIRE_FRESH=1 is set" >&2; exit 1
  else
    echo "fresh tier SKIPPED: needs root (debootstrap, chroot, mounts); run scripts/test.sh as root for it"
  fi
fi
step "all requested tiers passed: $TIERS"
