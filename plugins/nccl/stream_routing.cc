#include "plugins/nccl/stream_routing.h"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/group.h"
#include "core/validate.h"
#include "plugins/nccl/abi.h"

namespace hcl::nccl {
namespace {

// Process-wide because the NCCL API hands raw cudaStream_t values around.
struct StreamTable {
  std::mutex mutex;
  std::map<std::pair<ncclComm_t, cudaStream_t>, hclStream_t> streams;
};

StreamTable& table() {
  static StreamTable t;
  return t;
}

}  // namespace

CommPlace commPlace(ncclComm_t comm) {
  auto placeOf = [](Communicator& c) { return c.device().kind() == DeviceKind::Cpu ? CommPlace::Cpu : CommPlace::Gpu; };
  Communicator* usable = nullptr;
  if (checkComm(toHcl(comm), usable).ok()) return placeOf(*usable);
  std::shared_ptr<Communicator> any;  // finalized, failed, aborted or revoked
  if (!checkCommEvenIfFailed(toHcl(comm), any).ok() || !any) return CommPlace::Unknown;
  return placeOf(*any);
}

ncclResult_t streamFor(const char* call, ncclComm_t comm, cudaStream_t stream, hclStream_t* out) {
  *out = nullptr;
  if (commPlace(comm) != CommPlace::Gpu) return ncclSuccess;
  Status failed;
  {
    std::lock_guard lock(table().mutex);
    auto [it, added] = table().streams.try_emplace({comm, stream}, nullptr);
    if (added) {
      if (const hclResult_t r = hclCommWrapStream(toHcl(comm), stream, &it->second); r != hclSuccess) {
        table().streams.erase(it);
        // The wrap is HCL's own step, not an NCCL call: the text names `call`.
        std::string why = hclGetLastError(toHcl(comm));
        constexpr std::string_view kWrap = "hclCommWrapStream: ";
        if (why.starts_with(kWrap)) why.erase(0, kWrap.size());
        failed = Status{r, fmt::format("{}: {}", call, why)};
      }
    }
    if (failed.ok()) *out = it->second;
  }
  return failed.ok() ? ncclSuccess : report(failGroup(failed), comm);
}

hclResult_t endWithStreams(ncclComm_t comm, hclResult_t (*end)(hclComm_t)) {
  std::vector<std::pair<cudaStream_t, hclStream_t>> taken;
  {
    std::lock_guard lock(table().mutex);
    auto& streams = table().streams;
    for (auto it = streams.begin(); it != streams.end();) {
      if (it->first.first == comm) {
        taken.emplace_back(it->first.second, it->second);
        it = streams.erase(it);
      } else {
        ++it;
      }
    }
  }
  const hclResult_t r = end(toHcl(comm));
  if (r != hclSuccess) {
    std::lock_guard lock(table().mutex);
    for (const auto& [native, stream] : taken) table().streams.try_emplace({comm, native}, stream);
    return r;
  }
  for (const auto& entry : taken) hclStreamDestroy(entry.second);
  return r;
}

}  // namespace hcl::nccl
