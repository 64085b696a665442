#include "core/cpu_family.h"

namespace hcl {

const char* toString(CpuFamily f) {
  switch (f) {
    case CpuFamily::Amd: return "amd";
    case CpuFamily::Other: break;
  }
  return "other";
}

CpuFamily hostCpuFamily() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_is("amd")) return CpuFamily::Amd;
#endif
  return CpuFamily::Other;
}

}  // namespace hcl
