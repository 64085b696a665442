// C entry points: window registration.
#include <fmt/format.h>

#include "core/errors.h"
#include "core/group.h"
#include "core/validate.h"
#include "core/window_register.h"

using namespace hcl;

extern "C" {

// Collective, as in NCCL: inside a group it runs at hclGroupEnd, beside the
// group's communicator creations, and *win is filled then.
hclResult_t hclCommWindowRegister(hclComm_t comm, void* buff, size_t size, hclWindow_t* win, int winFlags) {
  static constexpr const char* kCall = "hclCommWindowRegister";
  std::shared_ptr<Communicator> c;
  Status s = checkComm(comm, c);
  if (s.ok() && !win) s = invalidArgument("win is NULL");
  if (s.ok() && !buff && size > 0) s = invalidArgument(fmt::format("buff is NULL with size {}", size));
  if (s.ok() && (winFlags & ~HCL_WIN_COLL_SYMMETRIC) != 0) {
    s = invalidArgument(
        fmt::format("winFlags {:#x} is not HCL_WIN_DEFAULT or HCL_WIN_COLL_SYMMETRIC", static_cast<unsigned>(winFlags)));
  }
  if (!s.ok()) return report(failGroup(s.withContext(kCall)), comm);
  *win = nullptr;
  if (inGroup()) {
    deferInit({[c, buff, size, winFlags, win] { return registerWindow(*c, buff, size, winFlags, win); },
               [](const Status&) {}, c.get(), {}});
    return hclSuccess;
  }
  return report(registerWindow(*c, buff, size, winFlags, win), comm);
}

// Local, like hclCommDeregister, and allowed on a failed or revoked
// communicator so that cleanup after a failure works.
hclResult_t hclCommWindowDeregister(hclComm_t comm, hclWindow_t win) {
  std::shared_ptr<Communicator> c;
  Status s = checkCommEvenIfFailed(comm, c);
  if (s.ok() && !win) s = invalidArgument("win is NULL");
  if (s.ok() && !c->windows().remove(win)) {
    s = invalidUsage(fmt::format("win {} is not a window of this communicator (deregistered already?)",
                                 static_cast<const void*>(win)));
  }
  return report(s.withContext("hclCommWindowDeregister"), comm);
}

}  // extern "C"
