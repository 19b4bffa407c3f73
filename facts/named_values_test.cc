#include "facts/named_values.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>

#include "facts/rdma_device_facts.h"
#include "facts/roce_facts.h"

namespace rdmahd {
namespace {

TEST(CounterValuesTest, LookupByNameAndAbsentValues) {
  auto names = std::make_shared<const CounterValues::Names>(CounterValues::Names{"a", "b", "c"});
  CounterValues v(names);
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.slot_count(), 3u);
  v.Set(2, 7);
  v.Set(0, 0);  // zero is a value, not absence
  v.Set(2, 9);  // overwrite does not count twice
  EXPECT_EQ(v.size(), 2u);
  EXPECT_EQ(v.Find("a"), 0u);
  EXPECT_FALSE(v.Find("b"));  // listed, no value
  EXPECT_FALSE(v.contains("b"));
  EXPECT_FALSE(v.Find("zz"));  // not listed
  EXPECT_EQ(v.at("c"), 9u);
  EXPECT_THROW((void)v.at("b"), std::out_of_range);
  EXPECT_FALSE(CounterValues().contains("a"));
  EXPECT_TRUE(CounterValues().empty());

  CounterValues p = CounterValues::FromPairs({{"z", 1}, {"m", 2}});
  ASSERT_EQ(p.slot_count(), 2u);
  EXPECT_EQ(p.name(0), "m");
  EXPECT_EQ(p.at("z"), 1u);
}

// Presence is a bit per slot: slots on both sides of a 64-slot word are told apart.
TEST(CounterValuesTest, PresenceOfManySlots) {
  CounterValues::Names list;
  for (int i = 0; i < 130; ++i) list.push_back(std::to_string(1000 + i));
  CounterValues v(std::make_shared<const CounterValues::Names>(list));
  for (std::size_t slot : {0u, 63u, 64u, 129u}) v.Set(slot, slot + 1);
  EXPECT_EQ(v.size(), 4u);
  for (std::size_t slot = 0; slot < v.slot_count(); ++slot) {
    const bool set = slot == 0 || slot == 63 || slot == 64 || slot == 129;
    EXPECT_EQ(v.value(slot), set ? std::optional<std::uint64_t>(slot + 1) : std::nullopt) << slot;
  }
  EXPECT_EQ(v.Find("1064"), 65u);
  EXPECT_FALSE(v.Find("1065"));
}

// The same class with signed values (DCQCN parameters may be negative).
TEST(NamedValuesTest, EcnParametersHoldSignedValues) {
  auto names = std::make_shared<const EcnParameters::Names>(EcnParameters::Names{"cnp_dscp", "rpg_gd"});
  EcnParameters p(names);
  EXPECT_TRUE(p.empty());
  p.Set(1, -3);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.at("rpg_gd"), -3);
  EXPECT_FALSE(p.contains("cnp_dscp"));
  EXPECT_EQ(p.SlotOf("cnp_dscp"), 0u);
  EXPECT_FALSE(p.SlotOf("dce_tcp_g"));
  EXPECT_THROW((void)p.at("cnp_dscp"), std::out_of_range);
  EXPECT_EQ(EcnParameters::FromPairs({{"b", -1}, {"a", 2}}).name(0), "a");
}

// Signed values keep their presence words among the values: the top bit of a word (slot 63) is a
// slot like any other, not a sign.
TEST(NamedValuesTest, TheLastSlotOfAWordIsPresentWithSignedValues) {
  EcnParameters::Names list;
  for (int i = 0; i < 65; ++i) list.push_back(std::to_string(1000 + i));
  EcnParameters p(std::make_shared<const EcnParameters::Names>(list));
  p.Set(63, std::int64_t{-1});
  p.Set(63, std::int64_t{-2});
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.value(63), -2);
  EXPECT_FALSE(p.value(62));
  EXPECT_FALSE(p.value(64));
  p.Set(64, std::int64_t{5});
  EXPECT_EQ(p.size(), 2u);
  EXPECT_EQ(p.value(64), 5);
  EXPECT_EQ(p.value(63), -2);
}

}  // namespace
}  // namespace rdmahd
