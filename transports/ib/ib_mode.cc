#include "transports/ib/ib_mode.h"

#include <fmt/format.h>

#include "core/params.h"
#include "transports/net_choice.h"

namespace hcl::ib {

Status readIbMode(IbMode& mode, std::string* askedBy) { return readIbMode(mode, askedBy, readNetRequest()); }

Status readIbMode(IbMode& mode, std::string* askedBy, const NetRequest& net) {
  const std::string text = resolveParam("HCL_IB").text;
  std::string why = "HCL_IB=on";
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
  if (mode == IbMode::Auto && resolveParam("HCL_IBVERBS_LIBRARY").origin.starts_with("HCL_")) {
    mode = IbMode::On;
    why = "HCL_IBVERBS_LIBRARY";
  }
  if (!netRequestAllows(net, TransportKind::Ib)) mode = IbMode::Off;
  if (net.choice == NetChoice::Ib && mode == IbMode::Auto) {
    mode = IbMode::On;
    why = fmt::format("{}='{}'", net.variable, net.name);
  }
  if (askedBy) *askedBy = why;
  return {};
}

}  // namespace hcl::ib
