#!/usr/bin/env bash
# clang's thread-safety analysis (-Wthread-safety) over every source file that sees common/mutex.h's
# annotations (includes it at any depth): a member marked GUARDED_BY touched without its
# mutex, or a REQUIRES function called without it, fails the build here (GCC ignores the attributes).
# Usage: scripts/thread_safety.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: scripts/thread_safety.sh BUILD_DIR}
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || { echo "thread_safety.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }
[[ -f "$build/compile_commands.json" ]] || { echo "thread_safety.sh: no $build/compile_commands.json" >&2; exit 1; }
# Syntax only, each file with the -I, -isystem, -D and -std its build compiles it with; every file
# is checked and every failure shown.
exec python3 - "$build/compile_commands.json" "$(nproc)" <<'PY'
import concurrent.futures, json, os, re, shlex, subprocess, sys
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
def build_flags(command):
    args, out = shlex.split(command), []
    for i, a in enumerate(args):
        if a in ("-I", "-isystem") and i + 1 < len(args):
            out += [a, args[i + 1]]
        elif a.startswith(("-I", "-isystem", "-D", "-std=")) and a not in ("-I", "-isystem"):
            out.append(a)
    return out
jobs = {}
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(e["file"], os.getcwd())
    if f.startswith("..") or f.endswith("_test.cc") or f.startswith(("tests/", "bench/", "fuzz/")) or f in jobs:
        continue
    if sees_mutex(f):
        jobs[f] = ["clang++", "-fsyntax-only", *build_flags(e["command"]), "-Wthread-safety",
                   "-Wthread-safety-beta", "-Werror=thread-safety-analysis", "-Werror=thread-safety-attributes",
                   "-Werror=thread-safety-precise", "-Werror=thread-safety-reference",
                   "-Werror=thread-safety-beta", e["file"]]
if not jobs:
    sys.exit("thread_safety.sh: no file uses common/mutex.h")
def run(item):
    f, cmd = item
    return f, subprocess.run(cmd, capture_output=True, text=True, cwd=os.getcwd())
failed = []
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[2])) as pool:
    for f, r in pool.map(run, jobs.items()):
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr + f"thread-safety: {f} FAILED\n")
            failed.append(f)
if failed:
    sys.exit(f"thread-safety analysis: {len(failed)} of {len(jobs)} files failed")
print(f"thread-safety analysis: {len(jobs)} files clean")
PY
