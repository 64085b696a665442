// Whether this machine's libfabric offers a provider, asked in a child
// process so that the forking test process never loads libfabric itself.
#pragma once

#include <string>

namespace hcltest {

// Empty when the provider can be opened; otherwise why not.
std::string ofiProviderMissing(const std::string& provider);

}  // namespace hcltest
