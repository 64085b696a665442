#include "perf/common/world_ops.h"

#include <cstring>

#include "perf/common/hcl_status.h"
#include "perf/common/names.h"

namespace hcl::perf {
namespace {

// Issues one call per driven rank inside a group; the group is always closed,
// and the first failure is what the caller sees.
template <typename Call>
Status grouped(size_t n, Call call) {
  PERF_HCL(hclGroupStart());
  Status first;
  for (size_t i = 0; i < n; ++i) {
    Status s = call(i);
    if (!s.ok() && first.ok()) first = s;
  }
  const hclResult_t end = hclGroupEnd();
  if (first.ok() && end != hclSuccess) first = hclCallStatus(end, "hclGroupEnd()");
  return first;
}

}  // namespace

Status WorldOps::allreduce(const void* contribution, const void* neutral, size_t count, hclDataType_t type,
                           hclRedOp_t op, void* out) {
  const size_t bytes = count * typeSize(type);
  std::vector<std::vector<uint8_t>> in(comms_.size()), res(comms_.size());
  for (size_t i = 0; i < comms_.size(); ++i) {
    const auto* src = static_cast<const uint8_t*>(i == 0 ? contribution : neutral);
    in[i].assign(src, src + bytes);
    res[i].resize(bytes);
  }
  Status s = grouped(comms_.size(), [&](size_t i) -> Status {
    PERF_HCL(hclAllReduce(in[i].data(), res[i].data(), count, type, op, comms_[i], nullptr));
    return {};
  });
  if (s.ok()) std::memcpy(out, res[0].data(), bytes);
  return s;
}

Status WorldOps::barrier() {
  int64_t token = 0;
  return reduce(token, hclSum);
}

Status WorldOps::reduce(double& value, hclRedOp_t op) {
  const double zero = 0;
  return allreduce(&value, op == hclSum ? &zero : &value, 1, hclFloat64, op, &value);
}

Status WorldOps::reduce(int64_t& value, hclRedOp_t op) {
  const int64_t zero = 0;
  return allreduce(&value, op == hclSum ? &zero : &value, 1, hclInt64, op, &value);
}

Status WorldOps::maxEach(std::vector<double>& values) {
  if (values.empty()) return {};
  return allreduce(values.data(), values.data(), values.size(), hclFloat64, hclMax, values.data());
}

Status WorldOps::allgather(std::span<const uint8_t> mine, size_t recordBytes, std::vector<uint8_t>& all) {
  int worldSize = 0;
  PERF_HCL(hclCommCount(comms_.front(), &worldSize));
  std::vector<std::vector<uint8_t>> res(comms_.size(),
                                        std::vector<uint8_t>(recordBytes * static_cast<size_t>(worldSize)));
  Status s = grouped(comms_.size(), [&](size_t i) -> Status {
    PERF_HCL(hclAllGather(mine.data() + i * recordBytes, res[i].data(), recordBytes, hclUint8, comms_[i], nullptr));
    return {};
  });
  if (s.ok()) all = std::move(res[0]);
  return s;
}

}  // namespace hcl::perf
