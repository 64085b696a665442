// The perf binaries' output format, JSON file, flags, exit codes and the
// test-only fault injection; plus the element codec behind exact checking.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "json_reader.h"
#include "nccl_tests_output.h"
#include "perf/common/float_codec.h"
#include "perf/common/names.h"
#include "perf/common/verify.h"
#include "perf_checks.h"
#include "perf_runner.h"

namespace hcltest {
namespace {

// nccl-tests output as printed by NVIDIA's binaries (formats of util.cu).
const std::string kSample =
    "# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809\n"
    "# Collective test starting: all_reduce_perf\n"
    "# nThread 1 nGpus 2 minBytes 1024 maxBytes 134217728 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0 unalign: 0\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  12345 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  12345 on     node01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n"
    "#\n"
    "#                                                              out-of-place                       in-place     "
    "     \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  "
    "#wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)  "
    "       \n"
    "   134217728      33554432     float     sum      -1  1234.50  108.72  203.85       0  1230.10  109.11  204.58  "
    "     0\n"
    "        1024           256      half    none       1    12.34    0.08    0.04       2    11.00    0.09    0.05  "
    "  N/A\n"
    "# Out of bounds values : 1 FAILED\n"
    "# Avg bus bandwidth    : 204.215 \n"
    "#\n"
    "# Collective test concluded: all_reduce_perf\n"
    "#\n"
    "\n";

std::string replaceFirst(std::string s, const std::string& from, const std::string& to) {
  s.replace(s.find(from), from.size(), to);
  return s;
}

NcclTestsOutput parseOrFail(const std::string& text) {
  NcclTestsOutput out;
  std::string problem;
  EXPECT_TRUE(parseNcclTestsOutput(text, out, problem)) << problem << "\n" << text;
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string tempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/hcl-perf-" + std::to_string(getpid()) + "-" + name;
}

std::vector<std::string> smallSweep(std::vector<std::string> extra) {
  std::vector<std::string> args = {"-t", "2", "-b", "8", "-e", "4K", "-f", "8", "-w", "1", "-n", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int64_t totalWrong(const NcclTestsOutput& out) {
  int64_t wrong = 0;
  for (const NcclTestsRow& r : out.rows) wrong += r.outOfPlace.wrong + r.inPlace.wrong;
  return wrong;
}

// ---- The parser itself -------------------------------------------------

TEST(NcclTestsOutputParser, ReadsNvidiaOutput) {
  const NcclTestsOutput out = parseOrFail(kSample);
  EXPECT_EQ(out.version, "2.19.6");
  EXPECT_EQ(out.collective, "all_reduce_perf");
  EXPECT_EQ(out.nGpus, 2);
  EXPECT_EQ(out.maxBytes, 134217728);
  EXPECT_EQ(out.stepKind, "factor");
  ASSERT_EQ(out.devices.size(), 2u);
  EXPECT_EQ(out.devices[1].busId, "0000:2a:00");
  EXPECT_EQ(out.devices[1].name, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(out.rows.size(), 2u);
  EXPECT_EQ(out.rows[0].count, 33554432);
  EXPECT_DOUBLE_EQ(out.rows[0].inPlace.busBw, 204.58);
  EXPECT_EQ(out.rows[1].root, 1);
  EXPECT_EQ(out.rows[1].outOfPlace.wrong, 2);
  EXPECT_FALSE(out.rows[1].inPlace.checked);
  EXPECT_EQ(out.outOfBounds, 1);
  EXPECT_EQ(out.outOfBoundsStatus, "FAILED");
  EXPECT_DOUBLE_EQ(out.avgBusBw, 204.215);
}

TEST(NcclTestsOutputParser, RejectsFormatDrift) {
  NcclTestsOutput out;
  std::string problem;
  // A column one character off, a wrong count format, a missing header line.
  EXPECT_FALSE(parseNcclTestsOutput(replaceFirst(kSample, "  1234.50", " 1234.50 "), out, problem));
  EXPECT_FALSE(parseNcclTestsOutput(replaceFirst(kSample, "       0  1230.10", "     0.0  1230.10"), out, problem));
  EXPECT_FALSE(parseNcclTestsOutput(replaceFirst(kSample, "# Using devices\n", ""), out, problem));
  EXPECT_FALSE(parseNcclTestsOutput(replaceFirst(kSample, "Rank  1 Group", "Rank 1 Group"), out, problem));
  EXPECT_FALSE(parseNcclTestsOutput(replaceFirst(kSample, "  108.72", "  108.7 "), out, problem));
}

TEST(NcclTestsOutputParser, ColumnRule) {
  EXPECT_TRUE(followsColumnRule("  12.34", 7));
  EXPECT_TRUE(followsColumnRule("1234.50", 7));
  EXPECT_TRUE(followsColumnRule("12345.6", 7));
  EXPECT_TRUE(followsColumnRule("1234567", 7));
  EXPECT_TRUE(followsColumnRule("1.2e+08", 7));
  EXPECT_FALSE(followsColumnRule("   12.3", 7));
  EXPECT_FALSE(followsColumnRule("12.34", 7));
  EXPECT_TRUE(followsColumnRule("  0.00", 6));
  EXPECT_TRUE(followsColumnRule("1234.5", 6));
  EXPECT_FALSE(followsColumnRule("  1234", 6));
}

// ---- Element codec: what expected values are built from ------------------

TEST(PerfExpectedValues, NarrowFloatsRoundToNearestEvenAndSaturate) {
  using hcl::perf::decodeFloat;
  using hcl::perf::encodeFloat;
  EXPECT_EQ(decodeFloat(hclFloat8e5m2, encodeFloat(hclFloat8e5m2, 17)), 16);  // tie between 16 and 20: even
  EXPECT_EQ(decodeFloat(hclFloat8e5m2, encodeFloat(hclFloat8e5m2, 9)), 8);
  EXPECT_EQ(decodeFloat(hclFloat8e5m2, encodeFloat(hclFloat8e5m2, 1e6)), 57344);  // saturates
  EXPECT_EQ(decodeFloat(hclFloat8e4m3, encodeFloat(hclFloat8e4m3, 17)), 16);
  EXPECT_EQ(decodeFloat(hclFloat8e4m3, encodeFloat(hclFloat8e4m3, 1000)), 448);  // saturates
  EXPECT_EQ(decodeFloat(hclBfloat16, encodeFloat(hclBfloat16, 257)), 256);
  EXPECT_EQ(decodeFloat(hclBfloat16, encodeFloat(hclBfloat16, 259)), 260);
  EXPECT_TRUE(std::isinf(decodeFloat(hclFloat16, encodeFloat(hclFloat16, 65520))));
  EXPECT_EQ(decodeFloat(hclFloat16, encodeFloat(hclFloat16, 65519)), 65504);
  EXPECT_EQ(encodeFloat(hclFloat16, 1.0), 0x3c00u);
  EXPECT_EQ(encodeFloat(hclFloat8e4m3, 1.0), 0x38u);
  EXPECT_EQ(encodeFloat(hclFloat8e5m2, -2.0), 0xc0u);
  EXPECT_EQ(decodeFloat(hclFloat16, 0x0001), std::ldexp(1.0, -24));  // subnormal
  EXPECT_EQ(encodeFloat(hclFloat16, std::ldexp(1.0, -24)), 0x0001u);
}

TEST(PerfExpectedValues, EveryFp8PatternRoundTrips) {
  for (hclDataType_t t : {hclFloat8e4m3, hclFloat8e5m2}) {
    for (uint64_t bits = 0; bits < 256; ++bits) {
      const double v = hcl::perf::decodeFloat(t, bits);
      if (std::isnan(v) || (v == 0 && bits != 0)) continue;  // NaNs; -0 encodes to its own pattern below
      EXPECT_EQ(hcl::perf::encodeFloat(t, v), bits) << "type " << t << " bits " << bits;
    }
  }
}

TEST(PerfExpectedValues, UlpDistanceAndIntegerWrap) {
  EXPECT_EQ(hcl::perf::ulpDistance(hclFloat16, 0x3c00, 0x3c02), 2u);
  EXPECT_EQ(hcl::perf::ulpDistance(hclFloat16, 0x0001, 0x8001), 2u);         // across zero
  EXPECT_EQ(hcl::perf::ulpDistance(hclFloat8e4m3, 0x7f, 0x7f), UINT64_MAX);  // NaN
  EXPECT_EQ(hcl::perf::encodeInteger(hclInt8, 128), 0x80u);
  EXPECT_EQ(hcl::perf::decodeInteger(hclInt8, 0x80), -128);
}

TEST(PerfExpectedValues, ReductionOfGeneratedInputsIsExact) {
  // Reduce the generated inputs by hand in double precision and compare with
  // the expected buffer for a type where every value is exact.
  constexpr int kRanks = 5;
  constexpr size_t kCount = 257;
  for (int op : {int(hclSum), int(hclProd), int(hclMax), int(hclMin), hcl::perf::kMulSum}) {
    std::vector<std::vector<double>> in(kRanks, std::vector<double>(kCount));
    for (int r = 0; r < kRanks; ++r) hcl::perf::fillReductionInput(in[r].data(), kCount, 7, hclFloat64, op, r, 42);
    std::vector<double> expected(kCount);
    hcl::perf::fillReductionExpected(expected.data(), kCount, 7, hclFloat64, op, kRanks, 42);
    for (size_t i = 0; i < kCount; ++i) {
      double acc = in[0][i];  // rank 0's PreMulSum scalar is 1
      for (int r = 1; r < kRanks; ++r) {
        const double v = in[r][i];
        switch (op) {
          case hclProd: acc *= v; break;
          case hclMax: acc = std::max(acc, v); break;
          case hclMin: acc = std::min(acc, v); break;
          case hcl::perf::kMulSum: acc += v * (1 + (r & 1)); break;
          default: acc += v;
        }
      }
      ASSERT_EQ(expected[i], acc) << "op " << op << " element " << i;
    }
  }
}

TEST(PerfExpectedValues, MismatchCountingUsesTwoUlpOnlyForFloatAvg) {
  const uint16_t want[2] = {0x3c00, 0x3c00};
  const uint16_t got[2] = {0x3c02, 0x3c03};
  EXPECT_EQ(hcl::perf::countMismatches(got, want, 2, hclFloat16, hclAvg), 1);
  EXPECT_EQ(hcl::perf::countMismatches(got, want, 2, hclFloat16, hclSum), 2);
  uint16_t corrupt[2] = {0x3c00, 0x3c00};
  hcl::perf::corruptFirstElement(corrupt, hclFloat16);
  EXPECT_EQ(hcl::perf::countMismatches(corrupt, want, 2, hclFloat16, hclAvg), 1);
}

// ---- Runs of the binaries ---------------------------------------------

TEST(PerfBinaryOutput, JsonFileMatchesTheTable) {
  const std::string path = tempPath("allreduce.json");
  const std::vector<std::string> args = smallSweep({"-d", "half", "-o", "all", "-H", "1", "-J", path});
  const PerfRun run = runSingle(perfBinary("all_reduce_perf"), args);
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  const NcclTestsOutput text = parseOrFail(run.procs[0].out);
  ASSERT_EQ(text.notes.front(), "# Writing JSON output to " + path);
  JsonValue doc;
  std::string error;
  ASSERT_TRUE(parseJson(readFile(path), doc, error)) << error;
  std::remove(path.c_str());

  ASSERT_NE(doc.find("version"), nullptr);
  ASSERT_NE(doc.find("args"), nullptr);
  ASSERT_EQ(doc.find("args")->items.size(), args.size() + 1);
  EXPECT_EQ(doc.find("args")->items.back().text, path);
  EXPECT_FALSE(doc.find("env")->items.empty());
  EXPECT_EQ(doc.find("nccl_version")->number, 22809);
  const JsonValue* config = doc.find("config");
  ASSERT_NE(config, nullptr);
  EXPECT_EQ(config->find("nthreads")->number, 2);
  EXPECT_EQ(config->find("ngpus")->number, 1);
  EXPECT_EQ(config->find("minimum_bytes")->number, 8);
  EXPECT_EQ(config->find("maximum_bytes")->number, 4096);
  EXPECT_EQ(config->find("step_factor")->number, 8);
  EXPECT_EQ(config->find("iterations")->number, 2);
  EXPECT_EQ(config->find("blocking_collectives")->text, "false");
  const JsonValue* devices = config->find("devices");
  ASSERT_NE(devices, nullptr);
  ASSERT_EQ(devices->items.size(), text.devices.size());
  for (size_t d = 0; d < text.devices.size(); ++d) {
    EXPECT_EQ(devices->items[d].find("rank")->number, text.devices[d].rank);
    EXPECT_EQ(devices->items[d].find("pid")->number, text.devices[d].pid);
    EXPECT_EQ(devices->items[d].find("hostname")->text, text.devices[d].host);
    EXPECT_EQ(devices->items[d].find("device_hex")->text, text.devices[d].busId);
    EXPECT_EQ(devices->items[d].find("device_info")->text, text.devices[d].name);
  }

  const JsonValue* results = doc.find("results");
  ASSERT_NE(results, nullptr);
  ASSERT_EQ(results->items.size(), text.rows.size());
  ASSERT_EQ(text.rows.size(), 6u * 4u);  // 6 operators x sizes 8, 64, 512, 4096
  for (size_t i = 0; i < text.rows.size(); ++i) {
    const NcclTestsRow& row = text.rows[i];
    const JsonValue& r = results->items[i];
    EXPECT_EQ(r.find("size")->number, row.bytes);
    EXPECT_EQ(r.find("count")->number, row.count);
    EXPECT_EQ(r.find("type")->text, row.type);
    EXPECT_EQ(r.find("redop")->text, row.redop);
    EXPECT_EQ(r.find("root")->text, "    -1");  // nccl-tests writes the padded column text
    EXPECT_EQ(r.find("actual_iterations")->number, 2);
    for (const auto& [key, half] : {std::pair{"out_of_place", &row.outOfPlace}, std::pair{"in_place", &row.inPlace}}) {
      const JsonValue* h = r.find(key);
      ASSERT_NE(h, nullptr) << key;
      // The table shows the same numbers rounded to its column width.
      EXPECT_NEAR(h->find("time")->number, half->timeUs, 0.0051 + 1e-3 * half->timeUs) << row.line;
      EXPECT_NEAR(h->find("alg_bw")->number, half->algBw, 0.0051 + 1e-3 * half->algBw) << row.line;
      EXPECT_NEAR(h->find("bus_bw")->number, half->busBw, 0.0051 + 1e-3 * half->busBw) << row.line;
      EXPECT_EQ(h->find("nwrong")->number, half->wrong);
    }
    // -H: the same algorithm and transports as the table's extra columns.
    std::istringstream tail(row.tail);
    std::string algorithm, transports;
    tail >> algorithm >> transports;
    EXPECT_EQ(r.find("hcl_algorithm")->text, algorithm);
    EXPECT_EQ(r.find("hcl_transports")->text, transports);
    EXPECT_EQ(transports, "local");  // threads of one process
  }
  EXPECT_EQ(doc.find("out_of_bounds")->find("count")->number, 0);
  EXPECT_EQ(doc.find("out_of_bounds")->find("okay")->text, "true");
  EXPECT_NEAR(doc.find("average_bus_bandwidth")->find("bandwidth")->number, text.avgBusBw, 1e-5 * text.avgBusBw + 1e-6);
  EXPECT_EQ(doc.find("average_bus_bandwidth")->find("okay")->text, "unchecked");
  ASSERT_NE(doc.find("end_time"), nullptr);
}

TEST(PerfBinaryOutput, JsonNeverOverwritesAFile) {
  const std::string path = tempPath("exists.json");
  { std::ofstream(path) << "keep"; }
  const PerfRun run = runSingle(perfBinary("sendrecv_perf"), smallSweep({"-J", path}));
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  EXPECT_EQ(parseOrFail(run.procs[0].out).notes.front(), "# Writing JSON output to " + path + ".0");
  EXPECT_EQ(readFile(path), "keep");
  JsonValue doc;
  std::string error;
  EXPECT_TRUE(parseJson(readFile(path + ".0"), doc, error)) << error;
  std::remove(path.c_str());
  std::remove((path + ".0").c_str());
}

TEST(PerfBinaryOutput, InjectedFaultIsCountedAndFailsTheRun) {
  const PerfRun run = runSingle(perfBinary("all_reduce_perf"), smallSweep({"-d", "bfloat16", "-o", "avg"}),
                                {{"HCL_PERF_INJECT_FAULT", "1"}});
  ASSERT_EQ(run.procs.size(), 1u);
  EXPECT_TRUE(run.procs[0].exited);
  EXPECT_NE(run.procs[0].code, 0);
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  ASSERT_FALSE(out.rows.empty());
  EXPECT_EQ(out.rows[0].outOfPlace.wrong, 1) << out.rows[0].line;  // one planted element
  EXPECT_EQ(totalWrong(out), 1);
  EXPECT_EQ(out.outOfBounds, 1);
  EXPECT_EQ(out.outOfBoundsStatus, "FAILED");
  EXPECT_EQ(out.failures.size(), 1u);
}

TEST(PerfBinaryOutput, InjectedFaultFailsEveryProcess) {
  const PerfRun run =
      runWithLauncherEnv(perfBinary("alltoall_perf"), {"-b", "1K", "-e", "1K", "-w", "1", "-n", "2", "-d", "int64"}, 2,
                         {{"HCL_PERF_INJECT_FAULT", "1"}});
  for (const ProcessOutput& p : run.procs) EXPECT_TRUE(p.exited && p.code != 0) << run.describe();
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0].outOfPlace.wrong, 1);
  EXPECT_EQ(out.outOfBoundsStatus, "FAILED");
}

TEST(PerfBinaryOutput, MinimumBusBandwidth) {
  const PerfRun low = runSingle(perfBinary("broadcast_perf"), smallSweep({}), {{"NCCL_TESTS_MIN_BW", "1000000"}});
  EXPECT_NE(low.procs[0].code, 0);
  EXPECT_EQ(parseOrFail(low.procs[0].out).avgBusBwStatus, "FAILED");
  const PerfRun ok = runSingle(perfBinary("broadcast_perf"), smallSweep({}), {{"NCCL_TESTS_MIN_BW", "0.000000001"}});
  EXPECT_TRUE(ok.allSucceeded()) << ok.describe();
  EXPECT_EQ(parseOrFail(ok.procs[0].out).avgBusBwStatus, "OK");
}

TEST(PerfBinaryOutput, HelpAndBadArguments) {
  const PerfRun help = runSingle(perfBinary("reduce_perf"), {"-h"});
  EXPECT_TRUE(help.allSucceeded());
  EXPECT_NE(help.procs[0].out.find("USAGE: reduce_perf"), std::string::npos);
  EXPECT_NE(help.procs[0].out.find("--hcl_details"), std::string::npos);
  const PerfRun badSize = runSingle(perfBinary("reduce_perf"), {"-b", "12Q"});
  EXPECT_NE(badSize.procs[0].code, 0);
  EXPECT_NE(badSize.procs[0].err.find("invalid size specified for 'minbytes'"), std::string::npos);
  const PerfRun badOrder = runSingle(perfBinary("reduce_perf"), {"-b", "1M", "-e", "1K"});
  EXPECT_NE(badOrder.procs[0].code, 0);
  const PerfRun unknown = runSingle(perfBinary("reduce_perf"), {"--no-such-flag"});
  EXPECT_NE(unknown.procs[0].code, 0);
  for (const char* size : {"inf", "nan", "1e30", "-1K"}) {
    const PerfRun run = runSingle(perfBinary("reduce_perf"), {"-e", size});
    EXPECT_NE(run.procs[0].code, 0) << size;
    EXPECT_NE(run.procs[0].err.find("invalid size specified for 'maxbytes'"), std::string::npos) << size;
  }
  const std::vector<std::pair<std::vector<std::string>, std::string>> outOfRange = {
      {{"-f", "-2"}, "invalid value -2 for -f (--stepfactor)"},
      {{"-y", "5"}, "invalid value 5 for -y (--stream_null)"},
      {{"-R", "-1"}, "invalid value -1 for -R (--local_register)"},
      {{"-R", "3"}, "invalid value 3 for -R (--local_register)"},
      {{"-H", "2"}, "invalid value 2 for -H (--hcl_details)"},
      {{"-n", "5000000000"}, "for -n (--iters): must be between 1 and"},
  };
  for (const auto& [args, message] : outOfRange) {
    const PerfRun run = runSingle(perfBinary("reduce_perf"), args);
    EXPECT_NE(run.procs[0].code, 0) << message;
    EXPECT_NE(run.procs[0].err.find(message), std::string::npos) << run.procs[0].err;
  }
}

// A sweep differing between processes would pair unrelated collectives; the
// processes find out before the table and fail together.
TEST(PerfBinaryOutput, ProcessesWithDifferentOptionsFailTogether) {
  const std::vector<std::string> common{"-b", "1K", "-e", "4K", "-f", "2", "-w", "1"};
  std::vector<std::string> two = common, three = common;
  two.insert(two.end(), {"-n", "2"});
  three.insert(three.end(), {"-n", "3"});
  const PerfRun run = runWithLauncherEnv(perfBinary("all_reduce_perf"), {two, three});
  ASSERT_EQ(run.procs.size(), 2u);
  for (const ProcessOutput& p : run.procs) {
    EXPECT_TRUE(p.exited && p.code != 0) << run.describe();
    EXPECT_NE(p.out.find("started with different options"), std::string::npos) << p.out;
  }
  const PerfRun same = runWithLauncherEnv(perfBinary("all_reduce_perf"), {two, two});
  EXPECT_TRUE(same.allSucceeded()) << same.describe();
}

TEST(PerfBinaryOutput, GpuOnlyFlagsAreIgnoredWithANotice) {
  const PerfRun run =
      runSingle(perfBinary("all_reduce_perf"), smallSweep({"-G", "4", "-x", "1", "-D", "1", "-V", "8"}));
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  for (const char* flag :
       {"-G (--cudagraph)", "-x (--cta_policy)", "-D (--device_implementation)", "-V (--device_cta_count)"}) {
    EXPECT_NE(run.procs[0].err.find(std::string(flag) + " needs a GPU: ignored on the CPU device"), std::string::npos)
        << flag;
  }
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  EXPECT_EQ(out.graph, 0);
  EXPECT_EQ(totalWrong(out), 0);
}

TEST(PerfBinaryOutput, LongOptions) {
  const PerfRun run = runSingle(
      perfBinary("reduce_scatter_perf"),
      {"--nthreads",     "2", "--minbytes", "1K",  "--maxbytes", "4K",    "--stepfactor", "2", "--iters",   "3",
       "--warmup_iters", "2", "--op",       "max", "--datatype", "int32", "--check",      "2", "--average", "3"});
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  EXPECT_EQ(out.nThread, 2);
  EXPECT_EQ(out.minBytes, 1024);
  EXPECT_EQ(out.iters, 3);
  EXPECT_EQ(out.warmupIters, 2);
  EXPECT_EQ(out.validation, 2);
  ASSERT_EQ(out.rows.size(), 3u);
  for (const NcclTestsRow& r : out.rows) {
    EXPECT_EQ(r.type, "int32");
    EXPECT_EQ(r.redop, "max");
  }
  EXPECT_EQ(totalWrong(out), 0);
}

// Options that change how calls are issued, waited for or timed must not
// change the results.
TEST(PerfBinaryOutput, IssueAndTimingOptionsKeepResultsCorrect) {
  const std::vector<std::vector<std::string>> variants = {
      {"-m", "3"},
      {"-z", "1"},
      {"-z", "2"},
      {"-z", "3"},
      {"-m", "2", "-z", "1"},
      {"-u", "3"},
      {"-R", "1"},
      {"-R", "2"},
      {"-R", "2", "-g", "2"},
      {"-p", "1"},
      {"-a", "0"},
      {"-a", "2"},
      {"-T", "60"},
      {"-y", "1"},
      {"-C", "1"},
      {"-N", "2"},
      {"-g", "2"},
      {"-I", "1", "-K", "1", "-S", "1"},
  };
  for (const auto& v : variants) {
    std::vector<std::string> extra = v;
    extra.insert(extra.end(), {"-d", "f8e5m2", "-o", "all"});
    const PerfRun run = runSingle(perfBinary("all_reduce_perf"), smallSweep(extra));
    std::string name;
    for (const std::string& a : v) name += a + " ";
    ASSERT_TRUE(run.allSucceeded()) << name << run.describe();
    const NcclTestsOutput out = parseOrFail(run.procs[0].out);
    EXPECT_EQ(out.rows.size(), (v[0] == "-N" ? 2u : 1u) * 6u * 4u) << name;
    EXPECT_EQ(totalWrong(out), 0) << name;
    EXPECT_EQ(out.outOfBoundsStatus, "OK") << name;
    if (v[0] == "-C") {
      EXPECT_NE(out.headerLines[1].find("cputime"), std::string::npos);
    }
    if (v[0] == "-z") {
      ASSERT_FALSE(out.notes.empty()) << name;
      EXPECT_EQ(out.notes.back().rfind("# Blocking Enabled", 0), 0u) << name;
    }
    if (v[0] == "-I") {
      for (const NcclTestsRow& r : out.rows) {
        std::istringstream tail(r.tail);
        std::vector<std::string> words;
        for (std::string w; tail >> w;) words.push_back(w);
        // i_min i_max i_p99 i_cv% (in-place) and the two words of the timestamp.
        EXPECT_EQ(words.size(), 6u) << r.line;
      }
    }
  }
}

TEST(PerfBinaryOutput, NoCheckPrintsNotAvailable) {
  const PerfRun run = runSingle(perfBinary("gather_perf"), smallSweep({"-c", "0"}));
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  ASSERT_FALSE(out.rows.empty());
  for (const NcclTestsRow& r : out.rows) EXPECT_FALSE(r.outOfPlace.checked || r.inPlace.checked) << r.line;
}

TEST(PerfBinaryOutput, ProcessesReportSharedMemoryTransport) {
  const PerfRun run =
      runWithLauncherEnv(perfBinary("all_gather_perf"), {"-b", "64K", "-e", "64K", "-n", "2", "-H", "1"}, 2);
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  ASSERT_EQ(out.rows.size(), 1u);
  std::istringstream tail(out.rows[0].tail);
  std::string algorithm, transports;
  tail >> algorithm >> transports;
  // The direct pull where the processes can reach each other's memory, else ring.
  EXPECT_TRUE(algorithm == "direct" || algorithm == "ring") << algorithm;
  EXPECT_EQ(transports, "shm");
  EXPECT_NE(out.devices[0].pid, out.devices[1].pid);
}

// NCCL_TESTS_SPLIT_MASK=1: processes 0 and 1 form two groups of two ranks
// (-t 2 each) that run side by side; rows use the group size.
TEST(PerfBinaryOutput, SplitMaskRunsGroupsInParallel) {
  const PerfRun run = runWithLauncherEnv(perfBinary("all_reduce_perf"), smallSweep({"-d", "int32", "-o", "all"}), 2,
                                         {{"NCCL_TESTS_SPLIT_MASK", "1"}});
  ASSERT_TRUE(run.allSucceeded()) << run.describe();
  const NcclTestsOutput out = parseOrFail(run.procs[0].out);
  ASSERT_EQ(out.devices.size(), 4u);
  EXPECT_EQ(out.devices[0].group, 0);
  EXPECT_EQ(out.devices[1].group, 0);
  EXPECT_EQ(out.devices[2].group, 1);
  EXPECT_EQ(out.devices[3].group, 1);
  EXPECT_EQ(totalWrong(out), 0);
  for (const NcclTestsRow& r : out.rows) {
    EXPECT_NEAR(r.outOfPlace.busBw, r.outOfPlace.algBw, 0.011) << r.line;  // 2(n-1)/n = 1 for n = 2
  }
}

}  // namespace
}  // namespace hcltest
