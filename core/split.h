// hclCommSplit: members of one color form a new communicator, ordered by key
// then by parent rank. hclCommShrink: the ranks not excluded form one, in
// parent order; only they take part. Both exchange over the parent's links.
#pragma once

#include <memory>
#include <vector>

#include "core/communicator.h"

namespace hcl {

Status splitCommunicator(const std::shared_ptr<Communicator>& parent, int color, int key,
                         const CommSettings& settings, std::shared_ptr<Communicator>& out);
// What hclCommShrink adds to a failed parent's error.
inline constexpr const char* kShrinkOfFailedParent =
    "; its links are closed, so the remaining ranks cannot shrink it: abort it and create a new communicator with "
    "hclCommInitRank";
// `excluded` holds valid, distinct parent ranks, not the caller's own.
Status shrinkCommunicator(const std::shared_ptr<Communicator>& parent, const std::vector<int>& excluded,
                          const CommSettings& settings, std::shared_ptr<Communicator>& out);

}  // namespace hcl
