// hclCommSplit: members of one color form a new communicator, ordered by key
// then by parent rank, exchanging over the parent's links (a revoked parent
// is first rebuilt whole at rank 0's rescue root). hclCommShrink:
// the ranks not excluded form one, in parent order; only they take part.
#pragma once

#include <memory>
#include <vector>

#include "core/communicator.h"

namespace hcl {

Status splitCommunicator(const std::shared_ptr<Communicator>& parent, int color, int key,
                         const CommSettings& settings, std::shared_ptr<Communicator>& out);
// `excluded` holds valid, distinct parent ranks, not the caller's own. A
// healthy parent is shrunk over its own links and stays usable; one that has
// failed, or that `abortParent` aborts first (HCL_SHRINK_ABORT), has no
// links left, and the survivors meet at a bootstrap root that the first of
// them starts on the rescue port it published at init.
Status shrinkCommunicator(const std::shared_ptr<Communicator>& parent, const std::vector<int>& excluded,
                          bool abortParent, const CommSettings& settings, std::shared_ptr<Communicator>& out);

}  // namespace hcl
