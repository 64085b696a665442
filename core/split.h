// hclCommSplit: members of one color form a new communicator, ordered by key
// then by parent rank. The exchange runs over the parent's own links.
#pragma once

#include <memory>

#include "core/communicator.h"

namespace hcl {

Status splitCommunicator(const std::shared_ptr<Communicator>& parent, int color, int key,
                         const CommSettings& settings, std::shared_ptr<Communicator>& out);

}  // namespace hcl
