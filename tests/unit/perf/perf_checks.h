// What a correct run of a perf binary looks like, written from nccl-tests'
// definitions (not from perf/): the rows each binary prints for a sweep, their
// sizes and counts, and each collective's bus-bandwidth factor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl_tests_output.h"

namespace hcltest {

struct CollectiveFacts {
  std::string binary;   // "all_reduce_perf"
  bool reduces;         // rows for every operator (sendrecv too, without reducing)
  bool rooted;          // prints the root
  bool inPlaceChecked;  // false: in-place #wrong is N/A
  bool sliced;          // per-rank slices aligned to 16 bytes
  bool powerOfTwo;      // hypercube
  // algbw bytes for `count` (the count column) elements of `elt` bytes.
  double (*algBytes)(double count, double elt, int nranks);
  double (*busFactor)(int nranks);
};

const std::vector<CollectiveFacts>& allCollectives();
const CollectiveFacts& collectiveFacts(const std::string& binary);
const std::vector<std::string>& typeNames();  // nccl-tests' -d all order
size_t typeSizeOf(const std::string& typeName);

struct SweepSpec {
  int64_t minBytes = 8;
  int64_t maxBytes = 64 * 1024;
  int64_t factor = 4;
  int nThread = 1;
  int nGpus = 1;
  int nranks = 2;
  int root = 0;  // the -r value for rooted collectives
  bool allTypesAndOps = true;
  int iters = 2;
  int warmup = 1;
  int cycles = 1;
};

// The sweep's arguments: -b -e -f -w -n [-d all -o all] [-r root].
std::vector<std::string> sweepArgs(const CollectiveFacts& c, const SweepSpec& s);

// Checks the whole report of a correct run (header, devices, every row with
// #wrong 0, sizes, counts, busbw factors, footer). Returns "" or a list of
// problems.
std::string checkCorrectRun(const NcclTestsOutput& out, const CollectiveFacts& c, const SweepSpec& s);

}  // namespace hcltest
