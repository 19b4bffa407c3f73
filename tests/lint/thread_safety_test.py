"""The lock annotations of common/mutex.h are live under clang: a member GUARDED_BY a mutex and
touched without it fails clang -Wthread-safety, and the same member touched under a MutexLock, or
in a function that REQUIRES the mutex, passes. Without this, macros that expanded to nothing
under clang would let scripts/thread_safety.sh pass every file while checking none.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

PROGRAM = """
#include "common/mutex.h"
namespace rdmahd {
class Counter {
 public:
  void Add() { MutexLock lock(mu_); ++n_; }
  void AddLocked() REQUIRES(mu_) { ++n_; }
  void AddTwice() { MutexLock lock(mu_); AddLocked(); AddLocked(); }
  int Wait() {
    MutexLock lock(mu_);
    while (n_ == 0) cv_.wait(lock);
    return n_;
  }
  %s
 private:
  Mutex mu_;
  std::condition_variable_any cv_;
  int n_ GUARDED_BY(mu_) = 0;
};
}  // namespace rdmahd
"""


class ThreadSafetyAnalysisTest(unittest.TestCase):
    def analyse(self, extra):
        clang = shutil.which("clang++")
        if clang is None:
            self.fail("clang++ not found: scripts/install-deps.sh test installs it")
        with tempfile.TemporaryDirectory(prefix="rdmahd-tsa-") as tmp:
            src = os.path.join(tmp, "t.cc")
            with open(src, "w") as f:
                f.write("#include <condition_variable>\n" + PROGRAM % extra)
            return subprocess.run([clang, "-std=c++20", "-fsyntax-only", "-I", SOURCE_DIR, "-Wthread-safety",
                                   "-Werror", src], capture_output=True, text=True, timeout=120)

    def test_locked_access_passes(self):
        r = self.analyse("")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_unlocked_access_fails(self):
        r = self.analyse("int Peek() { return n_; }")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("requires holding mutex 'mu_'", r.stderr)

    def test_calling_a_requires_function_without_the_lock_fails(self):
        r = self.analyse("void Bad() { AddLocked(); }")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("requires holding mutex 'mu_'", r.stderr)


if __name__ == "__main__":
    unittest.main()
