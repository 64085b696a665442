#include "core/window_register.h"

#include <fmt/format.h>

#include <vector>

#include "collectives/algorithms/ring.h"
#include "core/executor.h"

namespace hcl {
namespace {

struct WindowClaim {
  uint64_t bytes;
  int64_t flags;
};

// The first rank whose claim differs from rank 0's in `field`, or -1.
template <typename Field>
int firstDiffering(const std::vector<WindowClaim>& claims, Field field) {
  for (size_t r = 1; r < claims.size(); ++r) {
    if (field(claims[r]) != field(claims[0])) return static_cast<int>(r);
  }
  return -1;
}

Status checkAgreement(const std::vector<WindowClaim>& claims) {
  const auto flagsOf = [](const WindowClaim& c) { return c.flags; };
  if (const int r = firstDiffering(claims, flagsOf); r >= 0) {
    return invalidUsage(fmt::format("ranks disagree on winFlags: rank 0 passed {:#x}, rank {} passed {:#x} (every rank "
                                    "must pass the same flags)",
                                    claims[0].flags, r, claims[static_cast<size_t>(r)].flags));
  }
  const auto bytesOf = [](const WindowClaim& c) { return c.bytes; };
  if ((claims[0].flags & HCL_WIN_COLL_SYMMETRIC) != 0) {
    if (const int r = firstDiffering(claims, bytesOf); r >= 0) {
      return invalidUsage(fmt::format("a symmetric window (HCL_WIN_COLL_SYMMETRIC) needs one size on every rank: "
                                      "rank 0 registers {} bytes, rank {} registers {}",
                                      claims[0].bytes, r, claims[static_cast<size_t>(r)].bytes));
    }
  }
  return {};
}

}  // namespace

Status registerWindow(Communicator& comm, void* buffer, size_t bytes, int flags, hclWindow_t* out) {
  const int n = comm.nranks();
  std::vector<WindowClaim> claims(static_cast<size_t>(n));
  const WindowClaim mine{bytes, flags};
  CollArgs args;
  args.kind = CollKind::Control;
  args.rank = comm.rank();
  args.nranks = n;
  args.count = sizeof(WindowClaim) / sizeof(uint64_t);
  args.type = hclUint64;
  args.chunkBytes = comm.settings().chunkBytes;
  // runSingle names the call in its errors; the agreement check is named here.
  static constexpr const char* kCall = "hclCommWindowRegister";
  HCL_TRY(runSingle(comm, kCall, [&](RunSlot& slot) {
    slot.emplaceSchedule(comm, ringAllGather(args), RunBuffers{&mine, claims.data(), {}}, ReduceSpec{});
    return Status{};
  }));
  HCL_TRY(checkAgreement(claims).withContext(kCall));
  *out = comm.windows().add(Window{buffer, bytes, flags});
  return {};
}

}  // namespace hcl
