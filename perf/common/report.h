// Everything the perf binaries print: nccl-tests' text (to the character) on
// stdout and, with -J, nccl-tests' JSON file. Only the main thread of
// process 0 owns an enabled Reporter; everyone else passes nullptr or a
// disabled one.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "perf/common/device_info.h"
#include "perf/common/json.h"
#include "perf/common/options.h"
#include "perf/common/stats.h"

namespace hcl::perf {

// The value formatting of nccl-tests' columns: %.2f, else %.1f, else %.0f,
// else an exponent, whichever first fits in `width` characters.
std::string formatColumn(double value, int width);

struct MemoryUsage {
  double initialization = 0;  // bytes
  double userAllocated = 0;
  double collective = 0;
};

class Reporter {
 public:
  Reporter(bool enabled, const Options& options, std::string program);
  ~Reporter();
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  bool enabled() const { return enabled_; }

  // -J: opens the file (never overwriting one: FILE, FILE.0, FILE.1, ...).
  void openJson(int argc, char** argv, char** envp);
  // From the version line to "# Using devices".
  void runHeader();
  void devices(const std::vector<DeviceLine>& lines);
  void tableHeader();
  void rowStart(size_t bytes, size_t count, const char* typeName, const char* opName, int root);
  void rowHalf(double timeUsec, double algBw, double busBw, bool checked, int64_t wrong, bool outOfPlace);
  void rowPerIteration(const IterStats& stats, const std::vector<double>& times, int skipped, bool outOfPlace);
  // -H: the algorithm, the transports, and the cost model's estimate for the
  // call (0 when the communicator has no plan table); the estimate goes to
  // the JSON only.
  void rowDetails(const std::string& algorithm, const std::string& transports, double modelUs);
  void rowEnd();
  // minBw < 0: NCCL_TESTS_MIN_BW unset.
  void footer(int64_t errors, double avgBusBw, double minBw);
  void memory(const MemoryUsage& usage);
  void finish(const std::string& lastError);

 private:
  void print(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void timestamp();

  bool enabled_;
  const Options& options_;
  std::string program_;
  std::FILE* jsonFile_ = nullptr;
  std::unique_ptr<JsonWriter> json_;
};

}  // namespace hcl::perf
