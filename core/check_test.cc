#include "core/check.h"

#include <gtest/gtest.h>

#include <set>

#include "common/node_fs.h"
#include "tests/support/test_paths.h"

namespace rdmahd {
namespace {

TEST(CheckRegistryTest, EveryCheckIsDescribedAndInstantiable) {
  for (const auto& reg : CheckRegistry().entries()) {
    EXPECT_FALSE(reg.description.empty()) << reg.name;
    EXPECT_NE(reg.factory(), nullptr) << reg.name;
  }
  EXPECT_GE(CheckRegistry().entries().size(), 4u);
}

// docs/checks.md has a section for every check the binary runs, and none for a check it does not.
TEST(CheckRegistryTest, ChecksDocHasExactlyOneSectionPerCheck) {
  auto doc = ReadRegularFile(testing::SourceDir() + "/docs/checks.md", std::size_t{1} << 20);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  std::set<std::string> documented;
  std::size_t pos = 0;
  while ((pos = doc->find("\n### `", pos)) != std::string::npos) {
    pos += 6;
    documented.insert(doc->substr(pos, doc->find('`', pos) - pos));
  }
  std::set<std::string> registered;
  for (const auto& reg : CheckRegistry().entries()) registered.insert(reg.name);
  for (const auto& name : registered) {
    EXPECT_TRUE(documented.contains(name)) << "docs/checks.md has no section ### `" << name << "`";
  }
  for (const auto& name : documented) {
    EXPECT_TRUE(registered.contains(name)) << "docs/checks.md documents an unknown check " << name;
  }
}

}  // namespace
}  // namespace rdmahd
