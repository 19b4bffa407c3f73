// `check --capture`'s side of a bundle: leaving past a collection deadline, and a manifest that
// says the capture was cut.
#include "daemon/capture_check.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/test_paths.h"
#include "tests/support/test_trees.h"

namespace rdmahd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// `check --capture` whose collection missed its deadline leaves through _Exit (no destructor runs):
// the extraction is removed first, and the exit code is the command's. Always run here, whatever the
// machine's speed (the e2e test reaches this path only when a collector is slow enough).
TEST(CaptureCheckExitTest, TheExtractionIsRemovedWhenLeavingPastACollectionDeadline) {
  for (const char* busy : {"topology", ""}) {
    SCOPED_TRACE(busy);
    testing::TempDir base;
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::setenv("TMPDIR", base.path().c_str(), 1);
      auto t = rdmahd::TempDir::Create("rdma-healthd-capture-");
      if (!t) ::_exit(3);
      const int fd = ::open((t->path() + "/manifest.json").c_str(), O_CREAT | O_WRONLY, 0644);
      if (fd >= 0) ::close(fd);
      std::optional<rdmahd::TempDir> extraction(std::move(*t));
      LeaveIfACollectorIsStillRunning(busy, 1, &extraction);
      ::_exit(extraction ? 6 : 5);  // returned: nothing was busy, and the extraction is still held
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    if (*busy) {
      EXPECT_EQ(WEXITSTATUS(status), 1);
      EXPECT_EQ(testing::FolderNames(base.path()), std::vector<std::string>{});
    } else {
      EXPECT_EQ(WEXITSTATUS(status), 6);
      EXPECT_EQ(testing::FolderNames(base.path()).size(), 1u);  // _exit runs no destructor: left, as it is here
    }
  }
}

// Issue 41 item 4: a bundle whose capture stopped at its own cap was judged healthy.
TEST(CaptureIncompleteTest, ManifestThatSaysTheCaptureWasCutIsAProblem) {
  testing::TempDir dir;
  dir.Write("manifest.json", R"j({"complete": false, "cut_by": ["entries"], "node_verdict_exit_code": 2,
      "limits": {"entries": 100000, "total_bytes": 67108864, "seconds": 60},
      "skipped_by_reason": {"over the cap of 100000 entries (files, folders and links)": 348006,
                            "cannot read: Permission denied": 3}})j");
  auto p = IncompleteCaptureProblem(dir.path());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, "the bundle is incomplete: the capture stopped at its cap of 100000 entries and left out 348006 "
                "paths (manifest.json names them), not judged here; the node's own check said exit 2");
}

TEST(CaptureIncompleteTest, OlderManifestIsReadFromItsSkipReasons) {
  testing::TempDir dir;
  dir.Write("manifest.json", R"j({"limits": {"total_bytes": 67108864},
      "skipped_by_reason": {"over the total cap of 67108864 bytes": 12}})j");
  auto p = IncompleteCaptureProblem(dir.path());
  ASSERT_TRUE(p.has_value());
  EXPECT_THAT(*p, HasSubstr("stopped at its cap of 67108864 bytes and left out 12 paths"));
}

TEST(CaptureIncompleteTest, CompleteOrAbsentManifestIsNoProblemAndAHostileOneIsNotQuoted) {
  testing::TempDir dir;
  EXPECT_FALSE(IncompleteCaptureProblem(dir.path()).has_value());
  dir.Write("manifest.json", R"j({"complete": true, "cut_by": [],
      "skipped_by_reason": {"cannot read: Permission denied": 3}})j");
  EXPECT_FALSE(IncompleteCaptureProblem(dir.path()).has_value());
  dir.Write("manifest.json", "root:$6$secret-hash\n");
  auto p = IncompleteCaptureProblem(dir.path());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, "manifest.json is not a JSON object: whether the bundle is complete is unknown");
  dir.Write("manifest.json", R"j({"complete": false, "cut_by": ["\u001b[2J evil"]})j");
  p = IncompleteCaptureProblem(dir.path());
  ASSERT_TRUE(p.has_value());
  EXPECT_THAT(*p, HasSubstr("the bundle is incomplete: its manifest.json says so"));
  EXPECT_THAT(*p, Not(HasSubstr("evil")));
}

}  // namespace
}  // namespace rdmahd
