// Command-line options of the perf binaries: the flags of nccl-tests 2.19
// plus HCL's own -H.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hcl.h"

namespace hcl::perf {

struct Options {
  int nThreads = 1;
  int nGpus = 1;  // ranks driven by each thread
  size_t minBytes = 32u << 20;
  size_t maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  size_t stepFactor = 1;  // > 1 overrides stepBytes
  int iters = 20;
  int warmupIters = 1;
  int aggIters = 1;
  int runCycles = 1;  // 0: forever
  int parallelInit = 0;
  int check = 1;        // correctness-check iterations (0: none)
  int op = hclSum;      // operator index (names.h), -1: all
  int type = hclFloat;  // -1: all
  int root = 0;         // -1: all
  // 0: non-blocking; 1: wait + barrier after each inner iteration; 2: wait, no
  // barrier; 3: wait + barrier after each outer iteration (not timed).
  int blocking = 0;
  int streamNull = 0;  // run on the NULL stream (calls return when complete)
  int timeout = 0;     // seconds, 0: none
  int reportCputime = 0;
  int reportTimestamps = 0;
  int average = 1;  // 0: rank 0, 1: average, 2: min, 3: max
  int localRegister = 0;
  std::string outputFile;  // -J
  int memoryReport = 0;
  int unalign = 0;  // elements
  int perIterTiming = 0;
  int perIterSkip = 0;
  int hclDetails = 0;  // -H: algorithm and transports per row
};

enum class ParseOutcome { Run, ExitSuccess, ExitFailure };

// Parses argv with getopt_long. Usage and errors go to stdout/stderr as
// nccl-tests prints them; the outcome says whether to go on.
ParseOutcome parseOptions(int argc, char** argv, Options& out);

// A digest of the options that decide which collectives run and in what
// order (sizes, iterations, types, ops, roots, modes): every process of a run
// must have the same one.
int64_t scheduleFingerprint(const Options& o);

// "32M" -> 33554432 (binary K/M/G suffixes, a fraction is allowed); -1 if invalid.
double parseSize(const char* text);

}  // namespace hcl::perf
