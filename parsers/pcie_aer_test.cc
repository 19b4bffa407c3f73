#include "parsers/pcie_aer.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

std::map<std::string, std::uint64_t> ByCanonicalName(const AerCounts& counts) {
  std::map<std::string, std::uint64_t> out;
  for (const AerCounter& c : counts.counters) out[c.canonical_name] = c.count;
  return out;
}

// The old long names of the kernel ABI document's sample (corpus 78a): "Receiver Error 2" is a
// name with a space and a count, and maps to the short name today's kernels print.
TEST(PcieAerTest, OldLongNamesFromTheKernelAbiDocument) {
  const std::string text = testing::ReadRealFixture("corpus/78a_sysfs_aer_dev_correctable_old_names_kernel_abi_doc.txt");
  auto counts = ParseAerDevFile(text, AerSeverity::kCorrectable);
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  ASSERT_EQ(counts->counters.size(), 8u);
  EXPECT_EQ(counts->counters[0].name, "Receiver Error");
  EXPECT_EQ(counts->counters[0].canonical_name, "RxErr");
  EXPECT_EQ(counts->counters[0].count, 2u);
  EXPECT_EQ(counts->counters[3].name, "RELAY_NUM Rollover");
  EXPECT_EQ(counts->counters[3].canonical_name, "Rollover");
  ASSERT_TRUE(counts->total.has_value());
  EXPECT_EQ(*counts->total, 2u);
  EXPECT_FALSE(counts->total_mislabeled);

  auto fatal = ParseAerDevFile(testing::ReadRealFixture("corpus/78b_sysfs_aer_dev_fatal_old_names_kernel_abi_doc.txt"),
                               AerSeverity::kFatal);
  ASSERT_TRUE(fatal.ok()) << fatal.error().message;
  EXPECT_EQ(fatal->counters.size(), 17u);
  const auto fatal_names = ByCanonicalName(*fatal);
  EXPECT_TRUE(fatal_names.count("SDES"));          // "Surprise Down Error"
  EXPECT_TRUE(fatal_names.count("TLPBlockedErr"));  // "TLP Prefix Blocked Error"
  EXPECT_EQ(fatal->total, std::optional<std::uint64_t>(0));

  auto nonfatal = ParseAerDevFile(
      testing::ReadRealFixture("corpus/78c_sysfs_aer_dev_nonfatal_old_names_kernel_abi_doc.txt"), AerSeverity::kNonFatal);
  ASSERT_TRUE(nonfatal.ok()) << nonfatal.error().message;
  EXPECT_EQ(nonfatal->counters.size(), 17u);
  EXPECT_FALSE(nonfatal->total_mislabeled);
}

// Today's short names, one per line, in the procfs fixture tree with distinct non-zero values.
TEST(PcieAerTest, ShortNamesFromTheProcfsFixtureTree) {
  const std::string dir = "sysfs/procfs-fixtures/sys/devices/pci0000:00/0000:00:1f.6/";
  auto cor = ParseAerDevFile(testing::ReadRealFixture(dir + "aer_dev_correctable"), AerSeverity::kCorrectable);
  ASSERT_TRUE(cor.ok()) << cor.error().message;
  const auto names = ByCanonicalName(*cor);
  EXPECT_EQ(names.at("RxErr"), 1u);
  EXPECT_EQ(names.at("BadTLP"), 2u);
  EXPECT_EQ(names.at("HeaderOF"), 8u);
  EXPECT_EQ(cor->total, std::optional<std::uint64_t>(9));

  auto fatal = ParseAerDevFile(testing::ReadRealFixture(dir + "aer_dev_fatal"), AerSeverity::kFatal);
  ASSERT_TRUE(fatal.ok()) << fatal.error().message;
  EXPECT_EQ(ByCanonicalName(*fatal).at("PoisonTLPBlocked"), 27u);
  EXPECT_EQ(fatal->total, std::optional<std::uint64_t>(28));

  // This fixture's nonfatal file ends in TOTAL_ERR_FATAL: kept as the total, and said.
  auto nonfatal = ParseAerDevFile(testing::ReadRealFixture(dir + "aer_dev_nonfatal"), AerSeverity::kNonFatal);
  ASSERT_TRUE(nonfatal.ok()) << nonfatal.error().message;
  EXPECT_EQ(nonfatal->counters.size(), 18u);
  EXPECT_EQ(nonfatal->total, std::optional<std::uint64_t>(48));
  EXPECT_TRUE(nonfatal->total_mislabeled);
}

TEST(PcieAerTest, OldAndNewNamesGiveTheSameCanonicalNames) {
  auto old_file = ParseAerDevFile("Receiver Error 3\nBad DLLP 1\nTOTAL_ERR_COR 3\n", AerSeverity::kCorrectable);
  auto new_file = ParseAerDevFile("RxErr 3\nBadDLLP 1\nTOTAL_ERR_COR 3\n", AerSeverity::kCorrectable);
  ASSERT_TRUE(old_file.ok());
  ASSERT_TRUE(new_file.ok());
  EXPECT_EQ(ByCanonicalName(*old_file), ByCanonicalName(*new_file));
  EXPECT_EQ(CanonicalAerErrorName("SomethingNew"), "SomethingNew");
}

TEST(PcieAerTest, ToleratesWhatTheKernelMayVary) {
  // No trailing newline, blank lines, no TOTAL line, counts up to 2^64-1.
  auto counts = ParseAerDevFile("\nRxErr 18446744073709551615\n\nBadTLP 0", AerSeverity::kCorrectable);
  ASSERT_TRUE(counts.ok()) << counts.error().message;
  EXPECT_EQ(counts->counters[0].count, 18446744073709551615u);
  EXPECT_EQ(counts->counters.size(), 2u);
  EXPECT_FALSE(counts->total.has_value());
}

TEST(PcieAerTest, RefusesWhatIsNotAnAerFileNamingTheLine) {
  struct Case {
    std::string text;
    std::string says;
  };
  const Case cases[] = {
      {"", "no \"NAME COUNT\" line"},
      {"\n\n", "no \"NAME COUNT\" line"},
      {"RxErr\n", "line 1: no \"NAME COUNT\""},
      {"RxErr 1\nBadTLP x\n", "line 2: count is not a decimal"},
      {"RxErr 18446744073709551616\n", "line 1: count is not a decimal"},
      {"RxErr -1\n", "line 1: count is not a decimal"},
      {"RxErr 1\nRxErr 2\n", "line 2: the same error name twice"},
      {"TOTAL_ERR_COR 1\nTOTAL_ERR_COR 1\n", "line 2: a second TOTAL_ERR_* line"},
      {"Rx\x1b[2JErr 1\n", "line 1: name has a byte outside printable ASCII"},
      {"Rx\xc3\xa9rr 1\n", "line 1: name has a byte outside printable ASCII"},
      {std::string(65, 'A') + " 1\n", "line 1: name of 65 bytes"},
      {" 1\n", "line 1: no \"NAME COUNT\""},
  };
  for (const Case& c : cases) {
    auto counts = ParseAerDevFile(c.text, AerSeverity::kCorrectable);
    ASSERT_FALSE(counts.ok()) << ::testing::PrintToString(c.text);
    EXPECT_NE(counts.error().message.find(c.says), std::string::npos) << counts.error().message;
    EXPECT_EQ(counts.error().errno_value, EINVAL);
  }
  // Never the file's content in the message.
  auto secret = ParseAerDevFile("root:$6$secrethash:19000:0:99999:7:::\n", AerSeverity::kCorrectable);
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error().message.find("secret"), std::string::npos) << secret.error().message;
}

TEST(PcieAerTest, BoundsTheNumberOfLines) {
  std::string text;
  for (int i = 0; i < 70; ++i) {
    text += 'E';
    text += std::to_string(i);
    text += " 1\n";
  }
  auto counts = ParseAerDevFile(text, AerSeverity::kCorrectable);
  ASSERT_FALSE(counts.ok());
  EXPECT_NE(counts.error().message.find("line 65: more than 64 lines"), std::string::npos) << counts.error().message;
}

}  // namespace
}  // namespace rdmahd
