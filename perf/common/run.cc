#include "perf/common/run.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "perf/common/bench.h"
#include "perf/common/device_info.h"
#include "perf/common/hcl_details.h"
#include "perf/common/host_memory.h"
#include "perf/common/launch.h"
#include "perf/common/rank_set.h"
#include "perf/common/report.h"
#include "perf/common/world_ops.h"

namespace hcl::perf {
namespace {

// Settings of the perf tool itself (not HCL knobs, so not in the HCL
// parameter table): nccl-tests' variables and the test-only fault switch.
const char* toolEnv(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void reportFailure(const Status& s) {
  std::printf(" .. %s pid %d: Test failure: %s\n", shortHostName().c_str(), static_cast<int>(getpid()),
              s.message().c_str());
  std::fflush(stdout);
}

// Processes started with different sweeps would pair unrelated collectives.
Status checkSameOptions(RankSet& ranks, const Options& opt) {
  WorldOps world(worldComms(ranks.all()));
  int64_t lowest = scheduleFingerprint(opt);
  int64_t highest = lowest;
  HCL_TRY(world.reduce(lowest, hclMin));
  HCL_TRY(world.reduce(highest, hclMax));
  if (lowest == highest) return {};
  return Status{hclInvalidUsage,
                "the processes were started with different options; -b -e -i -f -n -w -m -N -c -o -d -r -z -a -M -H "
                "must be the same in every process"};
}

Status gatherDeviceLines(RankSet& ranks, const Options& opt, int color, const LaunchInfo& launch,
                         std::vector<DeviceLine>& lines) {
  std::vector<RankRecord> mine;
  for (const RankSlot& s : ranks.all()) mine.push_back(makeRankRecord(s.worldRank, color, launch.proc, s.localIndex));
  std::vector<uint8_t> bytes;
  WorldOps world(worldComms(ranks.all()));
  HCL_TRY(world.allgather(std::span(reinterpret_cast<const uint8_t*>(mine.data()), mine.size() * sizeof(RankRecord)),
                          sizeof(RankRecord), bytes));
  std::vector<RankRecord> all(bytes.size() / sizeof(RankRecord));
  std::memcpy(all.data(), bytes.data(), all.size() * sizeof(RankRecord));

  // A process's local rank: how many processes on its host come before it.
  std::map<uint64_t, std::set<int>> procsOnHost;
  for (const RankRecord& r : all) procsOnHost[r.hostHash].insert(r.proc);
  const char* firstDevice = toolEnv("NCCL_TESTS_DEVICE");
  const int perProcess = opt.nThreads * opt.nGpus;
  for (const RankRecord& r : all) {
    const auto& procs = procsOnHost[r.hostHash];
    const int localRank = static_cast<int>(std::distance(procs.begin(), procs.find(r.proc)));
    const int device = (firstDevice ? std::atoi(firstDevice) : localRank * perProcess) + r.localIndex;
    lines.push_back({r.worldRank, r.group, r.pid, r.host, device, "0000:00:00", r.name});
  }
  return {};
}

}  // namespace

int runPerfTest(const CollectiveTest& coll, int argc, char** argv, char** envp) {
  setlinebuf(stdout);
  Options opt;
  switch (parseOptions(argc, argv, opt)) {
    case ParseOutcome::ExitSuccess: return 0;
    case ParseOutcome::ExitFailure: return 1;
    case ParseOutcome::Run: break;
  }
  LaunchInfo launch;
  if (Status s = startLaunch(argc, argv, launch); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, s.message().c_str());
    return 1;
  }

  Reporter reporter(launch.proc == 0, opt, program_invocation_short_name);
  reporter.openJson(argc, argv, envp);
  reporter.runHeader();

  const int color = splitColor(launch.proc);
  bool split = false;
  for (int p = 0; p < launch.nProcs; ++p) split = split || splitColor(p) != color;

  RankSet ranks(opt, launch, color, split);
  std::optional<CallInspector> inspector;
  const double residentAtStart = residentBytes();
  double residentAfterInit = residentAtStart;
  Status setup = [&]() -> Status {
    hclUniqueId id;
    HCL_TRY(agreeOnUniqueId(launch, id));
    HCL_TRY(ranks.create(id));
    HCL_TRY(checkSameOptions(ranks, opt));
    residentAfterInit = residentBytes();
    std::vector<DeviceLine> lines;
    HCL_TRY(gatherDeviceLines(ranks, opt, color, launch, lines));
    reporter.devices(lines);
    if (opt.hclDetails) {
      for (RankSlot& s : ranks.all()) HCL_TRY(describeLinkKinds(s.comm, s.rank, s.nranks, s.linkKinds));
      inspector.emplace();
    }
    return {};
  }();
  if (!setup.ok()) {
    ranks.abortAll();
    reportFailure(setup);
    if (launch.mpi) abortLaunch(launch, 1);
    return 1;
  }
  reporter.tableHeader();

  const char* inject = toolEnv("HCL_PERF_INJECT_FAULT");
  const RunContext context{opt,
                           coll,
                           ranks,
                           launch.nProcs * opt.nThreads,
                           inject && std::strcmp(inject, "0") != 0,
                           inspector ? &*inspector : nullptr};
  std::vector<ThreadOutcome> outcomes(static_cast<size_t>(opt.nThreads));
  {
    std::vector<std::jthread> threads;
    for (int t = 1; t < opt.nThreads; ++t) {
      threads.emplace_back(
          [&, t] { outcomes[static_cast<size_t>(t)] = BenchThread(context, ranks.ofThread(t), nullptr).run(); });
    }
    outcomes[0] = BenchThread(context, ranks.ofThread(0), reporter.enabled() ? &reporter : nullptr).run();
  }
  for (const ThreadOutcome& o : outcomes) {
    if (o.status.ok()) continue;
    reportFailure(o.status);
    if (launch.mpi) abortLaunch(launch, 1);
    return 1;
  }

  int64_t errors = 0;
  std::vector<double> memory{0, 0, 0};
  for (const ThreadOutcome& o : outcomes) {
    errors += o.errors;
    memory[2] = std::max(memory[2], o.peakResidentBytes);
  }
  double bufferBytes = 0;
  for (const RankSlot& s : ranks.all()) {
    bufferBytes += static_cast<double>(s.send.size() + s.recv.size() + s.expected.size());
  }
  memory[0] = std::max(0.0, residentAfterInit - residentAtStart);
  memory[1] = bufferBytes;
  memory[2] = std::max(0.0, memory[2] - residentAfterInit - bufferBytes);
  WorldOps world(worldComms(ranks.all()));
  if (Status s = world.reduce(errors, hclSum); !s.ok()) {
    reportFailure(s);
    if (launch.mpi) abortLaunch(launch, 1);
    return 1;
  }
  if (opt.memoryReport) {
    if (Status s = world.maxEach(memory); !s.ok()) {
      reportFailure(s);
      return 1;
    }
  }

  // Every thread saw the same rows and the same reduced times.
  const double avgBusBw = outcomes[0].busBwSum / outcomes[0].busBwCount;
  const char* minBwText = toolEnv("NCCL_TESTS_MIN_BW");
  const double minBw = minBwText ? std::atof(minBwText) : -1.0;
  reporter.footer(errors, avgBusBw, minBw);
  if (opt.memoryReport) reporter.memory({memory[0], memory[1], memory[2]});
  const char* lastError = hclGetLastError(nullptr);
  reporter.finish(lastError ? lastError : "");
  finishLaunch(launch);
  if (errors || avgBusBw < minBw * 0.9) {
    std::printf(" .. %s pid %d: Test failure run.cc:%d\n", shortHostName().c_str(), static_cast<int>(getpid()),
                __LINE__);
    return 1;
  }
  return 0;
}

}  // namespace hcl::perf
