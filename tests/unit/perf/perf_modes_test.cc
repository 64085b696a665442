// Every perf binary with 2 and 3 ranks, every data type and operator, in one
// launch mode (compiled once per mode: PERF_MODE_THREADS, PERF_MODE_PROCESSES,
// PERF_MODE_MPI). Each run must exit 0 and print a correct nccl-tests report
// with #wrong = 0 in every row.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "nccl_tests_output.h"
#include "perf_checks.h"
#include "perf_runner.h"

namespace hcltest {
namespace {

using Param = std::tuple<std::string, int>;

class PerfModeTest : public ::testing::TestWithParam<Param> {};

void expectReport(const PerfRun& run, size_t reportingProcess, const CollectiveFacts& c, const SweepSpec& spec) {
  ASSERT_TRUE(run.allSucceeded()) << run.describe() << "stdout:\n" << run.procs[reportingProcess].out;
  NcclTestsOutput out;
  std::string problem;
  ASSERT_TRUE(parseNcclTestsOutput(run.procs[reportingProcess].out, out, problem)) << problem << "\nstdout:\n"
                                                                                   << run.procs[reportingProcess].out;
  const std::string problems = checkCorrectRun(out, c, spec);
  EXPECT_EQ(problems, "") << "stdout:\n" << run.procs[reportingProcess].out;
}

#if defined(PERF_MODE_THREADS)

// -t N: one thread per rank.
TEST_P(PerfModeTest, Threads) {
  const auto& [binary, nranks] = GetParam();
  const CollectiveFacts& c = collectiveFacts(binary);
  SweepSpec spec;
  spec.nThread = nranks;
  spec.nranks = nranks;
  spec.root = nranks - 1;
  expectReport(runSingle(perfBinary(binary), sweepArgs(c, spec)), 0, c, spec);
}

// -g N: one thread drives every rank inside hclGroupStart/End, here on the
// NULL stream (-y 1) over a shorter sweep.
TEST_P(PerfModeTest, RanksPerThread) {
  const auto& [binary, nranks] = GetParam();
  const CollectiveFacts& c = collectiveFacts(binary);
  SweepSpec spec;
  spec.nGpus = nranks;
  spec.nranks = nranks;
  spec.factor = 16;
  std::vector<std::string> args = sweepArgs(c, spec);
  args.insert(args.end(), {"-y", "1"});
  expectReport(runSingle(perfBinary(binary), args), 0, c, spec);
}

// hypercube_perf's later rounds send what earlier rounds received, which
// takes 4 ranks to show: with -g every round is its own group over all ranks.
TEST(PerfHypercube, FourRanksPerThreadSendWhatEarlierRoundsReceived) {
  const CollectiveFacts& c = collectiveFacts("hypercube_perf");
  SweepSpec spec;
  spec.nGpus = 4;
  spec.nranks = 4;
  spec.factor = 16;
  spec.allTypesAndOps = false;
  expectReport(runSingle(perfBinary("hypercube_perf"), sweepArgs(c, spec)), 0, c, spec);
}

#elif defined(PERF_MODE_PROCESSES)

// One process per rank, started with RANK/WORLD_SIZE and HCL_COMM_ID.
TEST_P(PerfModeTest, LauncherProcesses) {
  const auto& [binary, nranks] = GetParam();
  const CollectiveFacts& c = collectiveFacts(binary);
  SweepSpec spec;
  spec.nranks = nranks;
  spec.root = nranks - 1;
  const PerfRun run = runWithLauncherEnv(perfBinary(binary), sweepArgs(c, spec), nranks);
  expectReport(run, 0, c, spec);
  // Only process 0 reports; like nccl-tests, every process says when it skips.
  const std::string skipLine = "nRanks " + std::to_string(nranks) + " is not a power of 2, skipping\n";
  const bool skips = c.powerOfTwo && (nranks & (nranks - 1)) != 0;
  for (size_t p = 1; p < run.procs.size(); ++p) {
    EXPECT_EQ(run.procs[p].out, skips ? skipLine : "") << "process " << p << " printed";
  }
}

#elif defined(PERF_MODE_MPI)

// One process per rank under mpirun (MPI broadcasts the unique id).
TEST_P(PerfModeTest, MpiProcesses) {
  const auto& [binary, nranks] = GetParam();
  const CollectiveFacts& c = collectiveFacts(binary);
  SweepSpec spec;
  spec.nranks = nranks;
  spec.root = nranks - 1;
  spec.factor = 16;
  PerfRun run = runMpi(HCL_PERF_MPIRUN, perfBinary(binary), sweepArgs(c, spec), nranks);
  if (c.powerOfTwo && (nranks & (nranks - 1)) != 0) {
    // mpirun merges every process's stdout: the skip notices of processes
    // 1..n-1 land anywhere in process 0's report. Keep process 0's one.
    const std::string skipLine = "nRanks " + std::to_string(nranks) + " is not a power of 2, skipping\n";
    std::string& out = run.procs[0].out;
    int found = 0;
    for (size_t at; (at = out.find(skipLine)) != std::string::npos; ++found) out.erase(at, skipLine.size());
    EXPECT_EQ(found, nranks);
    out.insert(out.find("# Out of bounds values"), skipLine);
  }
  expectReport(run, 0, c, spec);
}

#endif

std::vector<std::string> binaries() {
  std::vector<std::string> names;
  for (const CollectiveFacts& c : allCollectives()) names.push_back(c.binary);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllBinaries, PerfModeTest,
                         ::testing::Combine(::testing::ValuesIn(binaries()), ::testing::Values(2, 3)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
                         });

}  // namespace
}  // namespace hcltest
