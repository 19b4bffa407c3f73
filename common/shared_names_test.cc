#include "common/shared_names.h"

#include <gtest/gtest.h>

#include <memory>

#include "common/held_files.h"

namespace rdmahd {
namespace {

TEST(ShareNamesTest, EqualListsAreOneListWhileOneIsHeld) {
  auto a = ShareNames({"port_rcv_data", "port_rcv_packets", "symbol_error"});
  auto b = ShareNames({"port_rcv_data", "port_rcv_packets", "symbol_error"});
  auto other = ShareNames({"port_rcv_data", "symbol_error"});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  EXPECT_EQ(*other, (NameList{"port_rcv_data", "symbol_error"}));

  // A list nobody holds is freed, not kept for later: the next equal list is made anew.
  std::weak_ptr<const NameList> watch = a;
  a.reset();
  b.reset();
  EXPECT_TRUE(watch.expired());
  auto c = ShareNames({"port_rcv_data", "port_rcv_packets", "symbol_error"});
  EXPECT_EQ(c->size(), 3u);
}

TEST(ShareNamesTest, AHeldFilesFolderKeepsItsListAlive) {
  auto list = ShareNames({"np_cnp_sent", "rp_cnp_handled"});
  std::weak_ptr<const NameList> watch = list;
  auto file = std::make_unique<HeldFile>(
      std::make_shared<const HeldFile::Folder>(HeldFile::Folder{"/sys/class/net/p0/ecn/roce_np", list}), 1);
  list.reset();
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(file->path(), "/sys/class/net/p0/ecn/roce_np/rp_cnp_handled");
  // And the list is still the one an equal listing gets.
  EXPECT_EQ(ShareNames({"np_cnp_sent", "rp_cnp_handled"}), watch.lock());
  file.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(ShareNamesTest, ManyDistinctListsAreNotAllRemembered) {
  // A host with many distinct listings: lists beyond the remembered few are still correct, only
  // not shared.
  auto name = [](int i) {
    std::string n = "c";
    n += std::to_string(i);
    return n;
  };
  std::vector<std::shared_ptr<const NameList>> held;
  for (int i = 0; i < 100; ++i) held.push_back(ShareNames({name(i)}));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(held[static_cast<std::size_t>(i)]->front(), name(i));
  EXPECT_EQ(ShareNames({"c99"}), held[99]);  // the newest are remembered
}

}  // namespace
}  // namespace rdmahd
