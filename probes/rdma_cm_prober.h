// RdmaCmProber: the PeerProber (probes/peer_prober.h) that measures over librdmacm and libibverbs.
// One call = one rdma_cm connection to the peer's responder (probes/probe_responder.h), a
// versioned handshake in the connect private data (probes/handshake.h), one exchange, and a full
// reverse-order teardown of every verbs object it created, whatever happened.
//   Latency:   RC SEND/RECV ping-pong, perftest ib_send_lat style: each sample is the time between
//              two consecutive posts of this side divided by 2 (iterations - 1 samples).
//   Bandwidth: RDMA WRITE stream into the responder's buffer (its rkey/addr come back in the
//              accept private data), `queue_depth` writes outstanding, bytes counted from
//              completions.
// Every wait is bounded (ProbeSource::step_timeout per rdma_cm step, the request's timeout for the
// exchange) and every failure maps to one of ProbeFailure's bounded reasons.
#pragma once

#include <memory>

#include "probes/peer_prober.h"

namespace rdmahd {

std::unique_ptr<PeerProber> MakeRdmaCmProber();

}  // namespace rdmahd
