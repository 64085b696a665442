// Exceptions stop here. Asio objects throw when the process is out of file
// descriptors, allocations throw when memory is exhausted; neither may cross
// the C API, so the layers that create them turn them into a Status.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>
#include <system_error>

#include "core/status.h"

namespace hcl {

template <typename Fn>
Status noThrow(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return systemError(fmt::format("{}: out of memory", what));
  } catch (const std::system_error& e) {
    return systemError(fmt::format("{}: {}", what, e.what()));
  } catch (const std::exception& e) {
    return internalError(fmt::format("{}: unexpected exception: {}", what, e.what()));
  }
}

}  // namespace hcl
