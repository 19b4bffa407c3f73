#include "probes/peer_publication.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace rdmahd {
namespace {

PeerSet TwoPeers() {
  PeerSet peers;
  for (const char* name : {"10.0.0.1", "10.0.0.2"}) {
    auto peer = std::make_unique<PeerState>();
    peer->target.name = name;
    peer->status.name = name;
    peers.emplace(name, std::move(peer));
  }
  return peers;
}

// A publication copies only the peers that changed; the others are the very objects published
// before, and a publication already made never changes.
TEST(PeerPublicationTest, OnlyChangedPeersAreCopiedAndPublishedStatusesNeverChange) {
  PeerSet peers = TwoPeers();
  EXPECT_TRUE(HasUnpublishedChanges(peers, false));  // new peers
  PeerFacts first;
  AddPeerStatuses(peers, first);
  ASSERT_EQ(first.peers.size(), 2u);
  EXPECT_EQ(first.peers[0]->name, "10.0.0.1");
  EXPECT_EQ(first.peers[1]->name, "10.0.0.2");
  EXPECT_EQ(first.peers[1]->histogram.count, 0u);
  EXPECT_EQ(first.peers[1]->histogram.buckets.size(), PeerLatencyBuckets().size() + 1);  // and +Inf
  EXPECT_FALSE(HasUnpublishedChanges(peers, false));
  EXPECT_TRUE(HasUnpublishedChanges(peers, true));  // the set or the errors changed

  // 10.0.0.2 is probed: 3 us.
  PeerState& probed = *peers.at("10.0.0.2");
  probed.histogram.Observe(3e-6);
  probed.status.last_latency = PeerProbeResult::kSuccess;
  probed.dirty = true;
  EXPECT_TRUE(HasUnpublishedChanges(peers, false));
  PeerFacts second;
  AddPeerStatuses(peers, second);
  ASSERT_EQ(second.peers.size(), 2u);
  EXPECT_EQ(second.peers[0], first.peers[0]);  // shared, not copied
  EXPECT_NE(second.peers[1], first.peers[1]);
  EXPECT_EQ(second.peers[1]->last_latency, PeerProbeResult::kSuccess);
  EXPECT_EQ(second.peers[1]->histogram.count, 1u);
  EXPECT_DOUBLE_EQ(second.peers[1]->histogram.sum_seconds, 3e-6);
  EXPECT_EQ(second.peers[1]->histogram.buckets[1], (std::pair<double, std::uint64_t>{2e-6, 0}));
  EXPECT_EQ(second.peers[1]->histogram.buckets[2], (std::pair<double, std::uint64_t>{5e-6, 1}));
  EXPECT_EQ(first.peers[1]->histogram.count, 0u);  // what was published stays as it was
  EXPECT_EQ(first.peers[1]->last_latency, PeerProbeResult::kNone);
  EXPECT_FALSE(HasUnpublishedChanges(peers, false));
}

}  // namespace
}  // namespace rdmahd
