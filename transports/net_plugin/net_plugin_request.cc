#include "transports/net_plugin/net_plugin_request.h"

#include "transports/net_choice.h"

namespace hcl::netplugin {

NetPluginRequest parseNetPluginRequest(const ParamValue& value) {
  NetPluginRequest r;
  if (value.text == "none") {
    r.off = true;
    return r;
  }
  r.spec = value.text;
  r.required = !value.text.empty() && value.origin.starts_with("HCL_");
  return r;
}

NetPluginRequest readNetPluginRequest(const NetRequest& net) {
  NetPluginRequest r = parseNetPluginRequest(resolveParam("HCL_NET_PLUGIN"));
  if (!netRequestAllows(net, TransportKind::NetPlugin)) r.off = true;
  return r;
}

}  // namespace hcl::netplugin
