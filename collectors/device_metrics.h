// The "devices" collector's metrics: rdma_device_* and rdma_port_*, rendered from its facts (each
// port whole: link layer, netdev and GIDs with state, rate and counters). The counter files with a
// metric of their own follow node_exporter's infiniband collector (node_infiniband_X ->
// rdma_port_X); every other counter file is a raw rdma_port_counters_total /
// rdma_port_hw_counters_total series labelled with its file name.
#pragma once

#include "common/metric_sink.h"
#include "facts/rdma_device_facts.h"

namespace rdmahd {

void RenderDeviceMetrics(const RdmaDevicesFacts& facts, MetricSink& sink);

}  // namespace rdmahd
