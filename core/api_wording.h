// How messages name the API. HCL's own library says "hclAllReduce"; the
// libnccl.so.2 built from the same core defines a stronger apiWording that
// says "ncclAllReduce", so log lines match the API the application called.
#pragma once

#include <string>
#include <string_view>

namespace hcl {

std::string apiWording(std::string_view text);

}  // namespace hcl
