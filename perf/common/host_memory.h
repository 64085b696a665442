// Resident memory of this process (the -M report on the CPU device).
#pragma once

#include <unistd.h>

#include <cstdio>

namespace hcl::perf {

inline double residentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace hcl::perf
