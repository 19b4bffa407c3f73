#include "parsers/kernel_log_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace rdmahd {
namespace {

// Every record of a saved log, the format detected from the file as a whole.
std::vector<KernelLogRecord> ReadSavedLog(const std::string& text, SavedLogFormat* detected = nullptr) {
  const SavedLogFormat format = DetectSavedLogFormat(text);
  if (detected) *detected = format;
  std::vector<KernelLogRecord> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + start, nl - start);
    if (!out.empty() && format == SavedLogFormat::kKmsg && AddKmsgDictLine(line, out.back())) {
      // a KEY=VALUE line of the record before
    } else if (auto r = ParseSavedLogLine(line, format)) {
      out.push_back(std::move(*r));
    }
    start = nl + 1;
  }
  return out;
}

TEST(KernelLogRecordTest, KmsgRecordWithItsDictionary) {
  auto r = ParseKmsgRecord(
      "3,1042,11176517416,-;mlx5_core 0000:05:00.0: mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) op_mod(0x1) "
      "failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)\n SUBSYSTEM=pci\n DEVICE=+pci:0000:05:00.0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->level, std::optional<std::uint8_t>(3));
  EXPECT_EQ(r->facility, std::optional<std::uint32_t>(0));
  EXPECT_EQ(r->sequence, std::optional<std::uint64_t>(1042));
  EXPECT_EQ(r->monotonic_us, std::optional<std::uint64_t>(11176517416));
  EXPECT_FALSE(r->continuation);
  EXPECT_EQ(r->subsystem, "pci");
  EXPECT_EQ(r->device.pci_address, "0000:05:00.0");
  EXPECT_EQ(r->device.driver, "mlx5_core");
  EXPECT_TRUE(r->message.starts_with("mlx5_core 0000:05:00.0: mlx5_cmd_out_err:835"));
  EXPECT_TRUE(r->message.ends_with("err(-22)"));
}

TEST(KernelLogRecordTest, KmsgEscapesFlagsAndExtraFields) {
  // A user-space write (facility 1, LOG_USER) with the kernel's escapes, a newer kernel's caller
  // field, and the continuation flag.
  auto r = ParseKmsgRecord("12,7,99,c,caller=T321;one\\x0atwo\\x5cthree\\x1b[2J\\xff");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->level, std::optional<std::uint8_t>(4));
  EXPECT_EQ(r->facility, std::optional<std::uint32_t>(1));
  EXPECT_TRUE(r->continuation);
  EXPECT_EQ(r->message, std::string("one\ntwo\\three\x1b[2J\xff"));
  // A backslash not followed by xNN stays as it is.
  auto plain = ParseKmsgRecord("6,8,100,-;a \\ b \\xZZ \\x4");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->message, "a \\ b \\xZZ \\x4");
}

TEST(KernelLogRecordTest, KmsgDeviceKinds) {
  auto net = ParseKmsgRecord("6,1,1,-;mlx5_core 0000:af:00.0 ens1f0np0: Link down\n SUBSYSTEM=net\n DEVICE=n7\n");
  ASSERT_TRUE(net.ok());
  EXPECT_EQ(net->device.ifindex, 7u);
  EXPECT_EQ(net->device.netdev, "ens1f0np0");
  EXPECT_EQ(net->device.pci_address, "0000:af:00.0");
  auto ib = ParseKmsgRecord("4,2,1,-;infiniband mlx5_0: something\n SUBSYSTEM=infiniband\n DEVICE=+infiniband:mlx5_0\n");
  ASSERT_TRUE(ib.ok());
  EXPECT_EQ(ib->device.ib_device, "mlx5_0");
  // DEVICE= wins over the message's own prefix, and a DEVICE= that is not an address is ignored.
  auto both = ParseKmsgRecord("4,3,1,-;pcieport 0000:00:1d.0: AER: x\n DEVICE=+pci:0000:03:00.0\n");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->device.pci_address, "0000:03:00.0");
  auto bogus = ParseKmsgRecord("4,4,1,-;x\n DEVICE=+pci:not-an-address\n DEVICE=n99999999999\n");
  ASSERT_TRUE(bogus.ok());
  EXPECT_TRUE(bogus->device.pci_address.empty());
  EXPECT_EQ(bogus->device.ifindex, 0u);
}

TEST(KernelLogRecordTest, RefusesWhatIsNotAKmsgRecord) {
  struct Case {
    std::string record, says;
  };
  const Case cases[] = {
      {"no semicolon here", "without ';'"},
      {"6,1,2;message", "3 fields, 4 needed"},
      {"6,x,2,-;message", "not a number"},
      {"-6,1,2,-;message", "not a number"},
      {"4096,1,2,-;message", "above 2047"},
      {"6,1,99999999999999999999999,-;m", "not a number"},
  };
  for (const Case& c : cases) {
    auto r = ParseKmsgRecord(c.record);
    ASSERT_FALSE(r.ok()) << c.record;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find("message"), std::string::npos) << "quotes the record: " << r.error().message;
  }
}

TEST(KernelLogRecordTest, BoundsMessagesAndRecords) {
  std::string huge = "6,1,1,-;";
  huge.append(20000, 'a');
  huge += "\n DEVICE=+pci:0000:05:00.0\n";  // past the record cap: never read
  auto r = ParseKmsgRecord(huge);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->message.size(), kKernelLogMaxMessageBytes);
  EXPECT_TRUE(r->truncated);
  EXPECT_TRUE(r->device.pci_address.empty());
  auto line = ParseSavedLogLine("[    1.000000] " + std::string(5000, 'b'), SavedLogFormat::kDmesg);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->message.size(), kKernelLogMaxMessageBytes);
  EXPECT_TRUE(line->truncated);
  // More dictionary lines than the cap: the first ones count.
  std::string many = "6,1,1,-;m\n";
  for (int i = 0; i < 40; ++i) {
    many += " K";
    many += std::to_string(i);
    many += "=v\n";
  }
  many += " SUBSYSTEM=pci\n";
  auto dict = ParseKmsgRecord(many);
  ASSERT_TRUE(dict.ok());
  EXPECT_TRUE(dict->subsystem.empty());
}

// Corpus 04: dmesg of a DGX with restricted PFs, one ACCESS_REG failure per counter read.
TEST(KernelLogRecordTest, DmesgOfCorpus04) {
  SavedLogFormat format;
  const auto records = ReadSavedLog(testing::ReadRealFixture("corpus/04_dmesg_mlx5_access_reg_failed_node_exporter_3434.txt"), &format);
  EXPECT_EQ(format, SavedLogFormat::kDmesg);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].monotonic_us, std::optional<std::uint64_t>(11176517416));
  EXPECT_EQ(records[0].device.pci_address, "0000:05:00.0");
  EXPECT_EQ(records[2].device.pci_address, "0000:05:00.1");
  EXPECT_EQ(records[3].monotonic_us, std::optional<std::uint64_t>(11176607052));
  EXPECT_FALSE(records[0].level.has_value());  // plain dmesg prints no priority
}

// Corpus 05: a journal in its default format, with another program's line in between.
TEST(KernelLogRecordTest, JournalOfCorpus05KeepsKernelLinesOnly) {
  SavedLogFormat format;
  const auto records = ReadSavedLog(testing::ReadRealFixture("corpus/05_journal_mlx5_access_reg_failed_gpud_1164.txt"), &format);
  EXPECT_EQ(format, SavedLogFormat::kJournalShort);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].device.pci_address, "0000:d2:00.0");
  EXPECT_TRUE(records[0].message.starts_with("mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838"));
}

// Corpus 62: dmesg -T, wall-clock times, trailing spaces.
TEST(KernelLogRecordTest, DmesgWallClockOfCorpus62) {
  SavedLogFormat format;
  const auto records = ReadSavedLog(
      testing::ReadRealFixture("corpus/62_dmesg_T_aer_correctable_severity_kernel6x_generic_dasharo815.txt"), &format);
  EXPECT_EQ(format, SavedLogFormat::kDmesgWallClock);
  ASSERT_EQ(records.size(), 14u);
  EXPECT_EQ(records[0].realtime_s, std::optional<std::int64_t>(1756498192));  // 2025-08-29 20:09:52 UTC
  EXPECT_EQ(records[0].device.pci_address, "0000:06:00.0");
  EXPECT_EQ(records[0].device.driver, "ath10k_pci");
  EXPECT_EQ(records[4].device.pci_address, "0000:00:1d.3");
}

// Corpus 61: copied without times, each line with a leading space.
TEST(KernelLogRecordTest, PlainLinesOfCorpus61) {
  SavedLogFormat format;
  const auto records = ReadSavedLog(
      testing::ReadRealFixture("corpus/61_dmesg_aer_corrected_physical_layer_new_format_generic_popos751.txt"), &format);
  EXPECT_EQ(format, SavedLogFormat::kPlain);
  ASSERT_EQ(records.size(), 11u);
  EXPECT_EQ(records[0].device.pci_address, "0000:00:1d.0");
  EXPECT_EQ(records[0].device.driver, "pcieport");
  EXPECT_EQ(records[7].device.pci_address, "0000:03:00.0");
  EXPECT_EQ(records[7].device.driver, "nvme");
  EXPECT_FALSE(records[0].monotonic_us.has_value());
}

// Corpus 72: an EFA device named by ibdev_printk's prefix.
TEST(KernelLogRecordTest, IbdevPrefixOfCorpus72) {
  const auto records =
      ReadSavedLog(testing::ReadRealFixture("corpus/72_dmesg_efa_failed_process_command_alloc_pd_awsofinccl22.txt"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].device.ib_device, "efa_0");
  EXPECT_EQ(records[0].device.driver, "infiniband");
  EXPECT_TRUE(records[0].device.pci_address.empty());
}

// Corpus 59 and 60: probe failures, with the pr_fmt prefix "mlx5_core: " on the last line.
TEST(KernelLogRecordTest, ProbeFailureLinesOfCorpus59And60) {
  for (const char* file : {"corpus/59_dmesg_mlx5_core_probe_failed_handle_hca_cap_cx4lx_tinycore9.txt",
                           "corpus/60_dmesg_mlx5_core_probe_failed_cx4121_rpext129.txt"}) {
    SCOPED_TRACE(file);
    const auto records = ReadSavedLog(testing::ReadRealFixture(file));
    ASSERT_GE(records.size(), 4u);
    const KernelLogRecord& last = records.back();
    EXPECT_EQ(last.device.driver, "mlx5_core");
    EXPECT_TRUE(last.device.pci_address.empty());  // named in the text, not the prefix
    EXPECT_FALSE(records.front().device.pci_address.empty());
  }
}

// The formats no corpus file has, written from what the tools print.
TEST(KernelLogRecordTest, DmesgRawJournalMonotonicAndKmsgCaptures) {
  const std::string raw = "<3>[   13.672173] mlx5_core 0000:03:00.0: handle_hca_cap failed\n"
                          "<4>[   14.059582] mlx5_core: probe of 0000:03:00.0 failed with error -22\n";
  SavedLogFormat format;
  auto records = ReadSavedLog(raw, &format);
  EXPECT_EQ(format, SavedLogFormat::kDmesgRaw);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].level, std::optional<std::uint8_t>(3));
  EXPECT_EQ(records[1].level, std::optional<std::uint8_t>(4));
  EXPECT_EQ(records[0].monotonic_us, std::optional<std::uint64_t>(13672173));

  const std::string journal = "-- Journal begins at Mon 2026-11-30 08:00:01 UTC. --\n"
                              "[11176.517416] node1 kernel: mlx5_core 0000:05:00.0: ACCESS_REG(0x805) failed\n"
                              "[11176.600000] node1 systemd[1]: Started something.\n"
                              "[11176.700000] node1 kernel: mlx5_core 0000:05:00.1 ens1f1np1: Link up\n";
  records = ReadSavedLog(journal, &format);
  EXPECT_EQ(format, SavedLogFormat::kJournalMonotonic);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].monotonic_us, std::optional<std::uint64_t>(11176517416));
  EXPECT_EQ(records[1].device.netdev, "ens1f1np1");
  EXPECT_EQ(records[1].device.pci_address, "0000:05:00.1");

  const std::string kmsg = "4,500,1000,-;pcieport 0000:00:1d.0: AER: Multiple Corrected error received: 0000:03:00.0\n"
                           " SUBSYSTEM=pci\n"
                           " DEVICE=+pci:0000:00:1d.0\n"
                           "3,501,2000,-;mlx5_core 0000:41:00.0: poll_health:478:(pid 0): Fatal error 1 detected\n";
  records = ReadSavedLog(kmsg, &format);
  EXPECT_EQ(format, SavedLogFormat::kKmsg);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].subsystem, "pci");
  EXPECT_EQ(records[1].sequence, std::optional<std::uint64_t>(501));
}

TEST(KernelLogRecordTest, TimeFieldsAreValidatedNotGuessed) {
  // A bracket that is not a time leaves the line as the message.
  auto r = ParseSavedLogLine("[abc] hello", SavedLogFormat::kDmesg);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->monotonic_us.has_value());
  EXPECT_EQ(r->message, "[abc] hello");
  // Fractions of other widths scale to microseconds.
  r = ParseSavedLogLine("[5.5] x", SavedLogFormat::kDmesg);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->monotonic_us, std::optional<std::uint64_t>(5500000));
  r = ParseSavedLogLine("[5.123456789] x", SavedLogFormat::kDmesg);
  EXPECT_EQ(r->monotonic_us, std::optional<std::uint64_t>(5123456));
  // A day of 0 or a month that is not one: not a wall clock.
  r = ParseSavedLogLine("[Fri Aug  0 20:09:52 2025] x", SavedLogFormat::kDmesgWallClock);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->realtime_s.has_value());
  EXPECT_EQ(DetectSavedLogFormat("[Fri Abc 29 20:09:52 2025] x\n"), SavedLogFormat::kPlain);
  EXPECT_FALSE(ParseSavedLogLine("", SavedLogFormat::kPlain).has_value());
  EXPECT_FALSE(ParseSavedLogLine("   ", SavedLogFormat::kPlain).has_value());
}

// A capture carries a saved log's records and nothing else: the prefix of the file's own format
// decides, never the looser reading that takes a dmesg line without its time as a message.
TEST(KernelLogRecordTest, OnlyALineWithItsFormatsPrefixIsARecordForACapture) {
  EXPECT_TRUE(HasSavedLogPrefix("[   12.925245] mlx5_core 0000:03:00.0: x", SavedLogFormat::kDmesg));
  EXPECT_FALSE(HasSavedLogPrefix("root:$6$x:19000:0:99999:7:::", SavedLogFormat::kDmesg));
  EXPECT_TRUE(ParseSavedLogLine("root:$6$x:19000:0:99999:7:::", SavedLogFormat::kDmesg).has_value());
  EXPECT_TRUE(HasSavedLogPrefix("<4>[   12.925245] x", SavedLogFormat::kDmesgRaw));
  EXPECT_FALSE(HasSavedLogPrefix("<x>[ 1.0] x", SavedLogFormat::kDmesgRaw));
  EXPECT_FALSE(HasSavedLogPrefix("<>", SavedLogFormat::kDmesgRaw));
  EXPECT_TRUE(HasSavedLogPrefix("[Fri Aug 29 20:09:52 2025] ath10k_pci x", SavedLogFormat::kDmesgWallClock));
  EXPECT_FALSE(HasSavedLogPrefix("Fri Aug 29 x", SavedLogFormat::kDmesgWallClock));
  EXPECT_TRUE(HasSavedLogPrefix("6,1234,5678,-;mlx5_core x", SavedLogFormat::kKmsg));
  EXPECT_FALSE(HasSavedLogPrefix(" SUBSYSTEM=pci", SavedLogFormat::kKmsg));
  EXPECT_FALSE(HasSavedLogPrefix("6,x,5678,-;y", SavedLogFormat::kKmsg));
  EXPECT_TRUE(HasSavedLogPrefix("Dec 02 09:56:04 host kernel: mlx5_core x", SavedLogFormat::kJournalShort));
  EXPECT_FALSE(HasSavedLogPrefix("Dec 02 09:56:04 host sshd[1]: x", SavedLogFormat::kJournalShort));
  EXPECT_FALSE(HasSavedLogPrefix("mlx5_core 0000:03:00.0: anything", SavedLogFormat::kPlain));
}

}  // namespace
}  // namespace rdmahd
