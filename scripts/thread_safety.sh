#!/usr/bin/env bash
# clang's thread-safety analysis (-Wthread-safety) over every source file that sees common/mutex.h's
# annotations (includes it at any depth): a member marked GUARDED_BY touched without its
# mutex, or a REQUIRES function called without it, fails the build here (GCC ignores the attributes).
# Syntax only (no code is generated), with the include folders and defines of the build's
# compile_commands.json. Usage: scripts/thread_safety.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: scripts/thread_safety.sh BUILD_DIR}
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "thread_safety.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }
[[ -f "$build/compile_commands.json" ]] || { echo "thread_safety.sh: no $build/compile_commands.json" >&2; exit 1; }
mapfile -t files < <(python3 - "$build/compile_commands.json" <<'PY'
import json, os, re, sys
src = os.getcwd()
include = re.compile(r'^#include "([^"]+)"', re.M)
edges = {}
def includes(path):
    if path not in edges:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                edges[path] = [i for i in include.findall(f.read()) if os.path.exists(i)]
        except OSError:
            edges[path] = []
    return edges[path]
def sees_mutex(path):  # common/mutex.h among the project headers `path` includes, at any depth
    todo, seen = [path], {path}
    while todo:
        for i in includes(todo.pop()):
            if i == "common/mutex.h":
                return True
            if i not in seen:
                seen.add(i)
                todo.append(i)
    return False
listed = set()
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(e["file"], src)
    if f.startswith("..") or f.endswith("_test.cc") or f.startswith(("tests/", "bench/", "fuzz/")) or f in listed:
        continue
    if sees_mutex(f):
        listed.add(f)
        print(f)
PY
)
(( ${#files[@]} > 0 )) || { echo "thread_safety.sh: no file uses common/mutex.h" >&2; exit 1; }
# The build's flags, GCC's own left out; every file checked, all failures shown.
flags=(-std=c++20 -fsyntax-only -I. -isystem /usr/include/libnl3 -isystem /usr/include/p11-kit-1
       -DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB '-DRDMAHD_VERSION="0"'
       -Wthread-safety -Wthread-safety-beta -Werror=thread-safety-analysis -Werror=thread-safety-attributes
       -Werror=thread-safety-precise -Werror=thread-safety-reference -Werror=thread-safety-beta)
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -I{} sh -c 'clang++ "$@" {} || { echo "thread-safety: {} FAILED" >&2; exit 1; }' _ "${flags[@]}"
echo "thread-safety analysis: ${#files[@]} files clean"
