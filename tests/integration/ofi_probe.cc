#include "ofi_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>

#include "transports/ofi/ofi_request.h"
#if __has_include(<rdma/fabric.h>)
#include "transports/ofi/fabric_api.h"
#include "transports/ofi/ofi_endpoint.h"
#define HCL_PROBE_OFI 1
#endif

namespace hcltest {
namespace {

std::string probe(const std::string& provider) {
#ifdef HCL_PROBE_OFI
  std::string why;
  const hcl::ofi::FabricApi* api = hcl::ofi::fabricApi(&why);
  if (!api) return why;
  std::unique_ptr<hcl::ofi::Endpoint> ep;
  bool found = false;
  const hcl::Status s =
      hcl::ofi::Endpoint::open(*api, hcl::ofi::OfiRequest{hcl::ofi::OfiMode::On, provider}, 0, 2, ep, &found);
  if (!s.ok()) return s.message();
  return found ? std::string() : "libfabric offers no provider '" + provider + "' here";
#else
  return "built without libfabric's headers";
#endif
}

}  // namespace

std::string ofiProviderMissing(const std::string& provider) {
  static std::map<std::string, std::string> known;  // one probe per provider and test process
  if (const auto it = known.find(provider); it != known.end()) return it->second;
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::string why = probe(provider);
    if (!why.empty()) (void)!write(fds[1], why.data(), why.size());
    _exit(0);
  }
  close(fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) why = "the probe process failed";
  return known[provider] = why;
}

}  // namespace hcltest
