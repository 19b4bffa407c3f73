#include "collectors/verbs_provider.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rdmahd {
namespace {

using ::testing::HasSubstr;

TEST(VerbsProviderTest, MtuEnumConvertsToBytes) {
  EXPECT_EQ(IbvMtuToBytes(1), 256u);
  EXPECT_EQ(IbvMtuToBytes(2), 512u);
  EXPECT_EQ(IbvMtuToBytes(3), 1024u);
  EXPECT_EQ(IbvMtuToBytes(4), 2048u);
  EXPECT_EQ(IbvMtuToBytes(5), 4096u);
  EXPECT_FALSE(IbvMtuToBytes(0));
  EXPECT_FALSE(IbvMtuToBytes(6));
}

// The real libibverbs on this machine. Build hosts have no RDMA device and no ib_uverbs (then
// ibv_get_device_list fails with ENOSYS): that must read as an empty list, not an error. On a node
// with devices every listed device has a name.
TEST(LibibverbsProviderTest, ListsWithoutErrorOnThisHost) {
  auto provider = MakeLibibverbsProvider();
  auto listed = provider->ListDevices();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  for (const VerbsDeviceId& id : *listed) EXPECT_FALSE(id.name.empty());
  if (listed->empty()) {
    // Opening a device that is not listed names it and fails with errno, without crashing.
    auto missing = provider->Open({"no_such_device0", std::nullopt});
    ASSERT_FALSE(missing.ok());
    EXPECT_THAT(missing.error().message, HasSubstr("no_such_device0"));
    EXPECT_NE(missing.error().errno_value, 0);
  }
}

}  // namespace
}  // namespace rdmahd
