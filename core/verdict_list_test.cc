#include "core/verdict_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/heap_in_use.h"

namespace rdmahd {
namespace {

using testing::HeapInUse;

std::vector<CheckResult> Sample() {
  return {{"port_active", "mlx5_0/1", Verdict::kOk, "ACTIVE, LinkUp", ""},
          {"port_active", "mlx5_1/1", Verdict::kFailed, "state 1: DOWN", "check the cable"},
          {"roce_pfc_priority", "ens1f0", Verdict::kWarning, std::string(40000, 'r'), "dcb pfc set dev ens1f0 prio-pfc 3:on"},
          {"", "", Verdict::kUnknown, "", ""}};
}

void ExpectSame(const VerdictList& list, const std::vector<CheckResult>& want) {
  ASSERT_EQ(list.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const VerdictView v = list[i];
    EXPECT_EQ(v.check, want[i].check);
    EXPECT_EQ(v.subject, want[i].subject);
    EXPECT_EQ(v.verdict, want[i].verdict);
    EXPECT_EQ(v.reason, want[i].reason);
    EXPECT_EQ(v.fix, want[i].fix);
  }
}

TEST(VerdictListTest, GivesBackEveryVerdictAsItWasAdded) {
  const std::vector<CheckResult> want = Sample();
  VerdictList list(want);
  ExpectSame(list, want);
  list.ShrinkToFit();  // moves the last block's texts
  ExpectSame(list, want);
  std::size_t n = 0;
  for (const VerdictView v : list) EXPECT_EQ(v.ToResult().subject, want[n++].subject);
  EXPECT_EQ(n, want.size());
  EXPECT_EQ(list.end() - list.begin(), 4);
  EXPECT_THROW((void)list.at(4), std::out_of_range);
  // Verdicts added after ShrinkToFit are kept as well.
  list.push_back({"port_rate", "mlx5_0/1", Verdict::kOk, "ACTIVE, LinkUp", ""});
  EXPECT_EQ(list.back().check, "port_rate");
  EXPECT_EQ(list.back().reason, "ACTIVE, LinkUp");
  EXPECT_EQ(list[1].reason, "state 1: DOWN");
}

TEST(VerdictListTest, CopiesAndMovesKeepTheirTexts) {
  const std::vector<CheckResult> want = Sample();
  auto original = std::make_unique<VerdictList>(want);
  VerdictList copy(*original);
  VerdictList assigned;
  assigned = *original;
  VerdictList moved(std::move(*original));
  original.reset();  // the copies own their texts
  ExpectSame(copy, want);
  ExpectSame(assigned, want);
  ExpectSame(moved, want);
  VerdictList moved_again;
  moved_again = std::move(moved);
  ExpectSame(moved_again, want);
}

// Texts are found by block and offset: across many blocks, with long texts in blocks of their own
// between them, before and after the open block is cut to size.
TEST(VerdictListTest, FindsTextsAcrossBlocksAndLongTextsBetweenThem) {
  std::vector<CheckResult> want;
  for (int i = 0; i < 3000; ++i) {
    const std::string reason = i % 500 == 7 ? std::string(20000 + i, static_cast<char>('a' + i % 26))
                                            : "reason " + std::to_string(i) + std::string(90, '.');
    want.push_back({"check_" + std::to_string(i % 3), "port " + std::to_string(i), static_cast<Verdict>(i % 4),
                    reason, i % 2 ? "fix " + std::to_string(i) : ""});
  }
  VerdictList list(want);
  ExpectSame(list, want);
  list.ShrinkToFit();
  ExpectSame(list, want);
}

// Each distinct text is kept once: a check's name, the reason every port in one state shares, the
// empty fix of the oks.
TEST(VerdictListTest, KeepsEachDistinctTextOnce) {
  VerdictList list;
  for (int port = 0; port < 1000; ++port) {
    list.push_back({"roce_transport_errors", "mlx5_" + std::to_string(port) + "/1", Verdict::kUnknown,
                    "no rate yet: the first collection of a counter gives no increase (one more collection is needed)",
                    ""});
  }
  // 1,000 subjects, the check, the reason and the empty text.
  EXPECT_EQ(list.texts(), 1003u);
  EXPECT_EQ(list[999].subject, "mlx5_999/1");
  EXPECT_EQ(list[999].reason, list[0].reason);
  EXPECT_EQ(list[999].reason.data(), list[0].reason.data());
}

// What a report holds, measured at the allocator, for the shape of a large node's report: 25
// checks on 2,000 ports, a reason per port and check that one other port shares, long check names.
// The list costs under half of the same verdicts as CheckResults, and MemoryBytes() says what it
// holds.
TEST(VerdictListTest, ALargeReportCostsUnderHalfOfItsCheckResultsMeasuredAtTheAllocator) {
  constexpr int kChecks = 25, kPorts = 2000;
  std::vector<CheckResult> results;
  auto make = [&] {
    results.reserve(kChecks * kPorts);
    for (int c = 0; c < kChecks; ++c) {
      for (int p = 0; p < kPorts; ++p) {
        results.push_back({"roce_check_number_" + std::to_string(c),
                           "mlx5_" + std::to_string(p / 2) + "/" + std::to_string(p % 2 + 1), Verdict::kOk,
                           "a reason of the usual length, with its observed value " + std::to_string(p % 1000) +
                               " and the threshold of check " + std::to_string(c),
                           ""});
      }
    }
  };
  const std::size_t before = HeapInUse();
  make();
  const std::size_t as_results = HeapInUse() - before;
  auto list = std::make_unique<VerdictList>();
  const std::size_t list_before = HeapInUse();
  list->reserve(results.size());
  for (const CheckResult& r : results) list->push_back(r);
  list->ShrinkToFit();
  const std::size_t as_list = HeapInUse() - list_before;
  ASSERT_EQ(list->size(), results.size());
  EXPECT_EQ(list->texts(), 1u + kChecks + kPorts + kChecks * 1000u);  // "", names, subjects, reasons
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator does not report to mallinfo2";
#endif
  EXPECT_LT(as_list, as_results / 2) << as_list << " against " << as_results << " bytes";
  EXPECT_NEAR(static_cast<double>(list->MemoryBytes()), static_cast<double>(as_list), 0.1 * static_cast<double>(as_list));
  std::vector<CheckResult>().swap(results);
  list.reset();
  // All of it given back, but for the chunks malloc's per-thread cache keeps (and mallinfo2()
  // counts as in use): a few KiB when this test runs alone in its process.
  EXPECT_LE(HeapInUse(), before + 16384);
}

// Once complete, the list holds no index of its texts: neither its nodes nor its buckets (a
// pointer or more per text), measured at the allocator.
TEST(VerdictListTest, ShrinkToFitGivesBackTheWholeIndexOfTexts) {
  constexpr std::size_t kTexts = 32768;  // a power of two: the texts' vector has no spare room to give back
  VerdictList list;
  list.reserve(kTexts - 2);
  for (std::size_t i = 0; i < kTexts - 2; ++i) list.push_back({"port_active", "mlx5_" + std::to_string(i) + "/1", Verdict::kOk, "", ""});
  ASSERT_EQ(list.texts(), kTexts);  // "", the check's name and the subjects
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator does not report to mallinfo2";
#endif
  const std::size_t filled = HeapInUse();
  list.ShrinkToFit();
  const std::size_t given_back = filled - HeapInUse();
  // A node (next, the text's view, its number, its hash: 48 bytes at the allocator) and at least a
  // bucket pointer per text; the open block's spare room (under 64 KiB) is less than the buckets.
  EXPECT_GE(given_back, kTexts * (48 + 8)) << given_back;
  EXPECT_EQ(list[kTexts - 3].subject, "mlx5_" + std::to_string(kTexts - 3) + "/1");
}

}  // namespace
}  // namespace rdmahd
