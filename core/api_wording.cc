#include "core/api_wording.h"

namespace hcl {

// Weak so that a library presenting another API can replace it at link time
// without any state that has to be set before the first message.
[[gnu::weak]] std::string apiWording(std::string_view text) { return std::string(text); }

}  // namespace hcl
