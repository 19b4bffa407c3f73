// LoadSingleYamlDocument: YAML text that must hold at most one document, read with the config
// loader's guards (flows nested past kMaxFlowDepth refused before the recursive parser, a second
// document or a token no document can start with refused instead of looping, an unclosed flow
// reported where it opens) and its "SOURCE:LINE:COL: ..." messages. The config file and the peer
// targets file (probes/peer_targets.h) both go through it. Never throws.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/result.h"

namespace rdmahd {

// An empty document (or only comments) is a null or undefined node, not an error.
Result<YAML::Node> LoadSingleYamlDocument(const std::string& text, const std::string& source);

}  // namespace rdmahd
