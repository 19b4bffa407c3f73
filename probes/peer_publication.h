// What a round of the "peers" probe publishes: PeerFacts (facts/peer_facts.h), each peer's status
// with its histogram's cumulative counts. A round publishes only when something changed, and a
// peer that did not change since its last publication is shared, not copied: with 1,000 peers a
// publication copies the statuses of the peers that were probed and 1,000 pointers.
#pragma once

#include "facts/peer_facts.h"
#include "probes/peer_state.h"

namespace rdmahd {

// True when `peers` hold a change not yet published: a peer's state changed, or `set_changed`
// (peers came or went, or an error or setting the facts carry changed).
bool HasUnpublishedChanges(const PeerSet& peers, bool set_changed);

// Adds every peer's status to `facts`, in name order: a peer changed since its last publication
// gets a new immutable copy with its histogram's counts, and is clean again; the others share the
// copy published before.
void AddPeerStatuses(PeerSet& peers, PeerFacts& facts);

}  // namespace rdmahd
