// LoadSingleYamlDocument: YAML text that must hold at most one document, read with the config
// loader's guards (flows nested past kMaxFlowDepth refused before the recursive parser, a second
// document or a token no document can start with refused instead of looping, an unclosed flow
// reported where it opens) and its "SOURCE:LINE:COL: ..." messages. The config file and the peer
// targets file (probes/peer_targets.h) both go through it. Never throws.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace rdmahd {

// An empty document (or only comments) is a null or undefined node, not an error. Messages quote
// no more of the text than short escaped excerpts (common/excerpt.h) and are capped in length.
Result<YAML::Node> LoadSingleYamlDocument(const std::string& text, const std::string& source);

// "SOURCE:LINE:COL: what is wrong" for text no YAML reader should be given: a NUL byte, ill-formed
// UTF-8, CR-only line ends, or a tab in the indentation (the loader's first check; exposed for
// readers that do not go through LoadSingleYamlDocument).
std::optional<std::string> YamlTextProblem(std::string_view text, const std::string& source);

}  // namespace rdmahd
