#include "transports/ofi/ofi_request.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>

#include "core/params.h"
#include "transports/net_choice.h"

namespace hcl::ofi {

Status parseOfiRequest(std::string_view mode, std::string_view provider, OfiRequest& out) {
  OfiRequest r;
  r.provider = std::string(provider);
  if (mode.empty() || mode == "auto") {
    r.mode = r.provider.empty() ? OfiMode::Auto : OfiMode::On;
  } else if (mode == "1" || mode == "on" || mode == "yes" || mode == "true") {
    r.mode = OfiMode::On;
  } else if (mode == "0" || mode == "off" || mode == "no" || mode == "false") {
    r.mode = OfiMode::Off;
  } else {
    return invalidArgument(fmt::format("HCL_OFI: '{}' is not auto, on (1) or off (0)", mode));
  }
  out = std::move(r);
  return {};
}

Status readOfiRequest(OfiRequest& out, const NetRequest& net) {
  HCL_TRY(parseOfiRequest(paramString("HCL_OFI"), paramString("HCL_OFI_PROVIDER"), out));
  if (!netRequestAllows(net, TransportKind::Ofi)) out.mode = OfiMode::Off;
  if (net.choice == NetChoice::Ofi && out.mode == OfiMode::Auto) {
    out.mode = OfiMode::On;
    out.askedBy = fmt::format("{}='{}'", net.variable, net.name);
    out.byNetRequest = true;
  }
  return {};
}

std::string_view coreProvider(std::string_view name) { return name.substr(0, name.find(';')); }

bool isSoftwareProvider(std::string_view name) {
  constexpr std::array<std::string_view, 5> kSoftware = {"tcp", "udp", "sockets", "shm", "net"};
  const std::string_view core = coreProvider(name);
  for (std::string_view s : kSoftware) {
    if (core == s) return true;
  }
  return false;
}

bool providerWanted(std::string_view name, const OfiRequest& request) {
  if (!request.provider.empty()) return name == request.provider;
  if (coreProvider(name) == "sockets") return false;
  return request.mode == OfiMode::On || !isSoftwareProvider(name);
}

bool hostShowsRdmaHardware(const std::string& root) {
  std::error_code ec;
  for (const char* cls : {"class/infiniband", "class/cxi"}) {
    const std::filesystem::path dir = std::filesystem::path(root) / cls;
    std::filesystem::directory_iterator it(dir, ec);
    if (!ec && it != std::filesystem::directory_iterator()) return true;
  }
  return false;
}

}  // namespace hcl::ofi
