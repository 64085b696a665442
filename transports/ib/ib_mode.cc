#include "transports/ib/ib_mode.h"

#include <fmt/format.h>

#include "core/params.h"

namespace hcl::ib {

Status readIbMode(IbMode& mode) {
  const std::string text = resolveParam("HCL_IB").text;
  if (text == "off" || text == "0") {
    mode = IbMode::Off;
  } else if (text == "on" || text == "1") {
    mode = IbMode::On;
  } else if (text == "auto" || text.empty()) {
    mode = IbMode::Auto;
  } else {
    return invalidArgument(fmt::format("HCL_IB='{}': expected auto, on or off", text));
  }
  if (paramBool("HCL_IB_DISABLE")) mode = IbMode::Off;
  if (mode == IbMode::Auto && resolveParam("HCL_IBVERBS_LIBRARY").origin.starts_with("HCL_")) mode = IbMode::On;
  return {};
}

}  // namespace hcl::ib
