// Command-line parsing: nccl-tests' getopt string and long names, plus -H.
#include <getopt.h>
#include <libgen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include "perf/common/names.h"
#include "perf/common/options.h"

namespace hcl::perf {
namespace {

constexpr const char* kShortOptions = "t:g:b:e:i:f:n:m:w:N:p:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:I:K:H:";

constexpr option kLongOptions[] = {
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"iters", required_argument, nullptr, 'n'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"run_cycles", required_argument, nullptr, 'N'},
    {"parallel_init", required_argument, nullptr, 'p'},
    {"check", required_argument, nullptr, 'c'},
    {"op", required_argument, nullptr, 'o'},
    {"datatype", required_argument, nullptr, 'd'},
    {"root", required_argument, nullptr, 'r'},
    {"blocking", required_argument, nullptr, 'z'},
    {"stream_null", required_argument, nullptr, 'y'},
    {"timeout", required_argument, nullptr, 'T'},
    {"cudagraph", required_argument, nullptr, 'G'},
    {"report_cputime", required_argument, nullptr, 'C'},
    {"report_timestamps", required_argument, nullptr, 'S'},
    {"output_file", required_argument, nullptr, 'J'},
    {"average", required_argument, nullptr, 'a'},
    {"local_register", required_argument, nullptr, 'R'},
    {"cta_policy", required_argument, nullptr, 'x'},
    {"device_implementation", required_argument, nullptr, 'D'},
    {"device_cta_count", required_argument, nullptr, 'V'},
    {"memory", required_argument, nullptr, 'M'},
    {"memory_report", required_argument, nullptr, 'M'},
    {"unalign", required_argument, nullptr, 'u'},
    {"per_iter_timing", required_argument, nullptr, 'I'},
    {"per_iter_skip", required_argument, nullptr, 'K'},
    {"hcl_details", required_argument, nullptr, 'H'},
    {"hcl-details", required_argument, nullptr, 'H'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

void printUsage(const char* program) {
  std::printf(
      "USAGE: %s \n\t"
      "[-t,--nthreads <num threads>] \n\t"
      "[-g,--ngpus <ranks per thread>] \n\t"
      "[-b,--minbytes <min size in bytes>] \n\t"
      "[-e,--maxbytes <max size in bytes>] \n\t"
      "[-i,--stepbytes <increment size>] \n\t"
      "[-f,--stepfactor <increment factor>] \n\t"
      "[-n,--iters <iteration count>] \n\t"
      "[-m,--agg_iters <aggregated iteration count>] \n\t"
      "[-w,--warmup_iters <warmup iteration count>] \n\t"
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
      "[-p,--parallel_init <0/1>] \n\t"
      "[-c,--check <check iteration count>] \n\t"
      "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
      "[-d,--datatype <nccltype/all>] \n\t"
      "[-r,--root <root/all>] \n\t"
      "[-z,--blocking <0/1/2/3>] \n\t"
      "[-y,--stream_null <0/1>] \n\t"
      "[-T,--timeout <time in seconds>] \n\t"
      "[-G,--cudagraph <num graph launches>] (GPU only: ignored on the CPU device) \n\t"
      "[-C,--report_cputime <0/1>] \n\t"
      "[-S,--report_timestamps <0/1> report timestamps (default 0)] \n\t"
      "[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix (only json "
      "supported presently.)] \n\t"
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
      "[-R,--local_register <0/1/2> enable local (1) or symmetric (2) buffer registration on send/recv buffers "
      "(default: disable (0))] "
      "\n\t"
      "[-x,--cta_policy <0/1/2>] (GPU only: ignored on the CPU device) \n\t"
      "[-D,--device_implementation <implementation number>] (GPU only: ignored on the CPU device) \n\t"
      "[-V,--device_cta_count <number>] (GPU only: ignored on the CPU device) \n\t"
      "[-M,--memory_report <0/1> enable host memory usage report (default: 0)] \n\t"
      "[-u,--unalign <num elements> misalign the buffers by this many elements (default: 0)] \n\t"
      "[-I,--per_iter_timing <0/1> report per-iteration statistics (default: 0)] \n\t"
      "[-K,--per_iter_skip <num iterations> leave the first iterations out of -I statistics (default: 0)] \n\t"
      "[-H,--hcl_details <0/1> HCL only: add the algorithm and the transports each call used to every row "
      "(default: 0)] \n\t"
      "[-h,--help]\n",
      program);
}

// As nccl-tests (strtol), but a value beyond int stays beyond every range
// check instead of wrapping into one.
int toInt(const char* text) {
  const long value = std::strtol(text, nullptr, 0);
  return static_cast<int>(std::clamp<long>(value, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

void ignoredOnCpu(char flag, const char* longName) {
  std::fprintf(stderr, "# -%c (--%s) needs a GPU: ignored on the CPU device\n", flag, longName);
}

bool sizeOption(const char* text, const char* what, size_t& out) {
  const double parsed = parseSize(text);
  if (parsed < 0) {
    std::fprintf(stderr, "invalid size specified for '%s'\n", what);
    return false;
  }
  out = static_cast<size_t>(parsed);
  return true;
}

struct Range {
  const char* flag;
  int value, lo, hi;
};

bool checkRanges(std::initializer_list<Range> ranges) {
  for (const Range& r : ranges) {
    if (r.value < r.lo || r.value > r.hi) {
      std::fprintf(stderr, "invalid value %d for %s: must be between %d and %d\n", r.value, r.flag, r.lo, r.hi);
      return false;
    }
  }
  return true;
}

}  // namespace

double parseSize(const char* text) {
  double size = 0;
  char suffix[2] = {0, 0};
  const int n = std::sscanf(text, "%lf %1s", &size, suffix);
  if (n < 1 || !(size >= 0)) return -1.0;
  double scale = 1.0;
  if (n == 2) {
    switch (suffix[0]) {
      case 'G':
      case 'g': scale = 1024.0 * 1024.0 * 1024.0; break;
      case 'M':
      case 'm': scale = 1024.0 * 1024.0; break;
      case 'K':
      case 'k': scale = 1024.0; break;
      default: return -1.0;
    }
  }
  // Also refuses inf and sizes no buffer could have (the cast to size_t
  // would be undefined).
  const double bytes = size * scale;
  return bytes <= 0x1p62 ? bytes : -1.0;
}

int64_t scheduleFingerprint(const Options& o) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : {uint64_t{o.minBytes}, uint64_t{o.maxBytes}, uint64_t{o.stepBytes}, uint64_t{o.stepFactor},
                     uint64_t(o.iters), uint64_t(o.warmupIters), uint64_t(o.aggIters), uint64_t(o.runCycles),
                     uint64_t(o.check), uint64_t(o.op), uint64_t(o.type), uint64_t(o.root), uint64_t(o.blocking),
                     uint64_t(o.average), uint64_t(o.memoryReport), uint64_t(o.hclDetails)}) {
    h = (h ^ v) * 0x100000001b3ull;
  }
  return static_cast<int64_t>(h >> 1);
}

ParseOutcome parseOptions(int argc, char** argv, Options& o) {
  std::string program = argv[0];
  program = basename(program.data());
  optind = 1;
  int stepFactor = static_cast<int>(o.stepFactor);
  int c;
  while ((c = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr)) != -1) {
    switch (c) {
      case 't': o.nThreads = toInt(optarg); break;
      case 'g': o.nGpus = toInt(optarg); break;
      case 'b':
        if (!sizeOption(optarg, "minbytes", o.minBytes)) return ParseOutcome::ExitFailure;
        break;
      case 'e':
        if (!sizeOption(optarg, "maxbytes", o.maxBytes)) return ParseOutcome::ExitFailure;
        break;
      case 'i':
        if (!sizeOption(optarg, "stepBytes", o.stepBytes)) return ParseOutcome::ExitFailure;
        break;
      case 'f': stepFactor = toInt(optarg); break;
      case 'n': o.iters = toInt(optarg); break;
      case 'm': o.aggIters = toInt(optarg); break;
      case 'w': o.warmupIters = toInt(optarg); break;
      case 'N': o.runCycles = toInt(optarg); break;
      case 'p': o.parallelInit = toInt(optarg); break;
      case 'c': o.check = toInt(optarg); break;
      case 'o': o.op = parseOpName(optarg); break;
      case 'd': o.type = parseTypeName(optarg); break;
      case 'r': o.root = std::strcmp(optarg, "all") == 0 ? -1 : toInt(optarg); break;
      case 'z': o.blocking = toInt(optarg); break;
      case 'y': o.streamNull = toInt(optarg); break;
      case 'T': o.timeout = toInt(optarg); break;
      case 'G': ignoredOnCpu('G', "cudagraph"); break;
      case 'C': o.reportCputime = toInt(optarg); break;
      case 'S': o.reportTimestamps = toInt(optarg); break;
      case 'J': o.outputFile = optarg; break;
      case 'a': o.average = toInt(optarg); break;
      case 'R': o.localRegister = toInt(optarg); break;
      case 'x': ignoredOnCpu('x', "cta_policy"); break;
      case 'D': ignoredOnCpu('D', "device_implementation"); break;
      case 'V': ignoredOnCpu('V', "device_cta_count"); break;
      case 'M': o.memoryReport = toInt(optarg); break;
      case 'u': o.unalign = toInt(optarg); break;
      case 'I': o.perIterTiming = toInt(optarg); break;
      case 'K': o.perIterSkip = toInt(optarg); break;
      case 'H': o.hclDetails = toInt(optarg); break;
      case 'h': printUsage(program.c_str()); return ParseOutcome::ExitSuccess;
      default:
        std::printf("invalid option '%c'\n", optopt ? optopt : '?');
        printUsage(program.c_str());
        return ParseOutcome::ExitFailure;
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
    return ParseOutcome::ExitFailure;
  }
  if (o.minBytes > o.maxBytes) {
    std::fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %llu > %llu\n",
                 static_cast<unsigned long long>(o.minBytes), static_cast<unsigned long long>(o.maxBytes));
    return ParseOutcome::ExitFailure;
  }
  if (!checkRanges({{"-t (--nthreads)", o.nThreads, 1, 1024},
                    {"-g (--ngpus)", o.nGpus, 1, 1024},
                    {"-n (--iters)", o.iters, 1, 1 << 30},
                    {"-m (--agg_iters)", o.aggIters, 1, 1 << 30},
                    {"-w (--warmup_iters)", o.warmupIters, 0, 1 << 30},
                    {"-N (--run_cycles)", o.runCycles, 0, 1 << 30},
                    {"-c (--check)", o.check, 0, 1 << 30},
                    {"-z (--blocking)", o.blocking, 0, 3},
                    {"-a (--average)", o.average, 0, 3},
                    {"-T (--timeout)", o.timeout, 0, 1 << 30},
                    {"-u (--unalign)", o.unalign, 0, 1 << 20},
                    {"-K (--per_iter_skip)", o.perIterSkip, 0, 1 << 30},
                    {"-f (--stepfactor)", stepFactor, 0, 1 << 20},
                    {"-p (--parallel_init)", o.parallelInit, 0, 1},
                    {"-y (--stream_null)", o.streamNull, 0, 1},
                    {"-C (--report_cputime)", o.reportCputime, 0, 1},
                    {"-S (--report_timestamps)", o.reportTimestamps, 0, 1},
                    {"-R (--local_register)", o.localRegister, 0, 2},
                    {"-M (--memory_report)", o.memoryReport, 0, 1},
                    {"-I (--per_iter_timing)", o.perIterTiming, 0, 1},
                    {"-H (--hcl_details)", o.hclDetails, 0, 1}})) {
    return ParseOutcome::ExitFailure;
  }
  o.stepFactor = static_cast<size_t>(stepFactor);
  if (o.root < -1) {
    std::fprintf(stderr, "invalid value %d for -r (--root)\n", o.root);
    return ParseOutcome::ExitFailure;
  }
  return ParseOutcome::Run;
}

}  // namespace hcl::perf
