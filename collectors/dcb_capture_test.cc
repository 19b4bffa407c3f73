#include "collectors/dcb_capture.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

TEST(DcbCaptureTest, ReadsTheFixtureFolder) {
  auto st = ReadDcbCapture(testing::ProjectFixture("roce/pfc-off/dcb"), "ens1f0np0");
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_TRUE(st->pfc);
  EXPECT_FALSE(st->pfc->Enabled(3));
  EXPECT_TRUE(st->pfc->Enabled(4));
  EXPECT_EQ(DscpPriorityMap(*st).at(26), 3);
}

TEST(DcbCaptureTest, MissingUnsupportedAndBrokenCaptures) {
  testing::TempDir dir;
  auto missing = ReadDcbCapture(dir.path(), "eth0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errno_value, ENOENT);

  dir.Write("veth0/pfc.json", "unsupported\n");
  auto none = ReadDcbCapture(dir.path(), "veth0");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->supported);

  dir.Write("eth1/pfc.json", "{\"prio_pfc\": [true]}");
  auto broken = ReadDcbCapture(dir.path(), "eth1");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("eth1/pfc.json"), std::string::npos) << broken.error().message;

  dir.Write("eth2/app.json", R"({"dscp_prio":[[26,3]]})");  // no pfc.json: PFC unknown
  auto app_only = ReadDcbCapture(dir.path(), "eth2");
  ASSERT_TRUE(app_only.ok());
  EXPECT_FALSE(app_only->pfc.has_value());
  EXPECT_TRUE(app_only->app.has_value());
}

}  // namespace
}  // namespace rdmahd
