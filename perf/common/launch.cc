#include "perf/common/launch.h"

#include <fmt/format.h>
#include <strings.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/params.h"
#include "perf/common/hcl_status.h"

#ifdef HCL_PERF_WITH_MPI
#include <mpi.h>
#endif

namespace hcl::perf {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool parseNonNegative(const char* text, int& out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > (1 << 24)) return false;
  out = static_cast<int>(v);
  return true;
}

// Integers as nccl-tests reads them: leading spaces, base prefix, or 0b binary.
bool parseSplitValue(const char* s, int& out) {
  while (*s && std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (!*s) return false;
  char* end = nullptr;
  out = strncasecmp(s, "0b", 2) == 0 ? static_cast<int>(std::strtoul(s + 2, &end, 2))
                                     : static_cast<int>(std::strtoul(s, &end, 0));
  return end != s;
}

#ifdef HCL_PERF_WITH_MPI
bool underMpiLauncher() { return env("OMPI_COMM_WORLD_SIZE") != nullptr || env("PMIX_RANK") != nullptr; }
#endif

}  // namespace

Status startLaunch(int& argc, char**& argv, LaunchInfo& out) {
  out = LaunchInfo{};
#ifdef HCL_PERF_WITH_MPI
  if (underMpiLauncher()) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return systemError("MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &out.proc);
    MPI_Comm_size(MPI_COMM_WORLD, &out.nProcs);
    out.mpi = true;
    out.source = "MPI";
    return {};
  }
#endif
  static constexpr std::pair<const char*, const char*> kLaunchers[] = {
      {"RANK", "WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
      {"SLURM_PROCID", "SLURM_NTASKS"},
  };
  for (const auto& [rankVar, sizeVar] : kLaunchers) {
    const char* rank = env(rankVar);
    const char* size = env(sizeVar);
    if (!rank || !size) continue;
    if (!parseNonNegative(rank, out.proc) || !parseNonNegative(size, out.nProcs) || out.nProcs < 1 ||
        out.proc >= out.nProcs) {
      return invalidArgument(
          fmt::format("{}={} and {}={} do not name a process of the job", rankVar, rank, sizeVar, size));
    }
    out.source = fmt::format("{}/{}", rankVar, sizeVar);
    if (out.nProcs > 1 && paramString("HCL_COMM_ID").empty()) {
      return invalidArgument(fmt::format(
          "{} processes were started by a launcher ({}) without MPI: set HCL_COMM_ID=host:port (the bootstrap root, "
          "which process 0 runs) in every process",
          out.nProcs, out.source));
    }
    return {};
  }
  return {};
}

Status agreeOnUniqueId(const LaunchInfo& launch, hclUniqueId& id) {
  std::memset(&id, 0, sizeof id);
  if (launch.mpi) {
#ifdef HCL_PERF_WITH_MPI
    // Process 0 makes the id; a failure there must not leave the others
    // waiting in the broadcast, so its result travels with it.
    int result = hclSuccess;
    if (launch.proc == 0) result = hclGetUniqueId(&id);
    Status s = result == hclSuccess ? Status{} : hclCallStatus(static_cast<hclResult_t>(result), "hclGetUniqueId(&id)");
    MPI_Bcast(&result, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (result != hclSuccess && s.ok())
      s = Status{static_cast<hclResult_t>(result), "hclGetUniqueId failed in process 0"};
    return s;
#endif
  }
  // One process, or every process deriving the same id from HCL_COMM_ID.
  PERF_HCL(hclGetUniqueId(&id));
  return {};
}

void finishLaunch(const LaunchInfo& launch) {
#ifdef HCL_PERF_WITH_MPI
  if (launch.mpi) MPI_Finalize();
#endif
}

void abortLaunch(const LaunchInfo& launch, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef HCL_PERF_WITH_MPI
  if (launch.mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

int splitColor(int proc) {
  if (const char* mask = env("NCCL_TESTS_SPLIT_MASK")) {
    return proc & static_cast<int>(std::strtoul(mask, nullptr, 16));
  }
  const char* spec = env("NCCL_TESTS_SPLIT");
  if (!spec) return 0;
  struct Rule {
    const char* word;
    const char* symbol;
    int (*apply)(int proc, int v);
  };
  static constexpr Rule kRules[] = {
      {"AND", "&", [](int p, int v) { return p & v; }},
      {"OR", "|", [](int p, int v) { return p | v; }},
      {"MOD", "%", [](int p, int v) { return v ? p % v : 0; }},
      {"DIV", "/", [](int p, int v) { return v ? p / v : 0; }},
  };
  for (const Rule& r : kRules) {
    int v = 0;
    for (const char* prefix : {r.word, r.symbol}) {
      const size_t n = std::strlen(prefix);
      if (strncasecmp(spec, prefix, n) == 0 && parseSplitValue(spec + n, v)) return r.apply(proc, v);
    }
  }
  return 0;
}

}  // namespace hcl::perf
