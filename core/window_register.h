// hclCommWindowRegister's collective part: every rank tells the others the
// size and flags of its window, and all check the same table, so a rank
// that disagrees fails the call on every rank alike.
#pragma once

#include <cstddef>

#include "core/communicator.h"

namespace hcl {

// Errors come named after hclCommWindowRegister.
Status registerWindow(Communicator& comm, void* buffer, size_t bytes, int flags, hclWindow_t* out);

}  // namespace hcl
