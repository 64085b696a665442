// A strict parser of nccl-tests' stdout (the format of nccl-tests 2.19's
// util.cu), used to check that HCL's perf binaries print it to the character.
// It knows the format independently of perf/: header lines are matched
// literally, device lines and table rows are re-rendered with nccl-tests'
// printf formats and compared with the original text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hcltest {

struct NcclTestsHalf {
  std::string timeText, algBwText, busBwText;
  double timeUs = 0, algBw = 0, busBw = 0;
  bool checked = false;  // false: "N/A"
  int64_t wrong = 0;
};

struct NcclTestsRow {
  int64_t bytes = 0;
  int64_t count = 0;
  std::string type;
  std::string redop;
  int root = 0;
  NcclTestsHalf outOfPlace, inPlace;
  std::vector<std::string> outOfPlacePerIteration;  // -I: i_min i_max i_p99 i_cv%
  std::string tail;  // what follows the in-place columns (-I in-place columns, timestamps, -H)
  std::string line;
};

struct NcclTestsDevice {
  int rank = 0, group = 0, pid = 0, device = 0;
  std::string host, busId, name;
};

struct NcclTestsOutput {
  std::string version;
  int ncclHeaders = 0, ncclLibrary = 0;
  std::string collective;  // "# Collective test starting: X"
  int nThread = 0, nGpus = 0;
  int64_t minBytes = 0, maxBytes = 0, step = 0;
  std::string stepKind;  // "factor" or "bytes"
  int warmupIters = 0, iters = 0, aggIters = 0, validation = 0, graph = 0, unalign = 0;
  std::vector<std::string> notes;  // "# Blocking Enabled..." and the like
  std::vector<NcclTestsDevice> devices;
  std::vector<std::string> headerLines;  // the three table header lines
  std::vector<NcclTestsRow> rows;
  std::vector<std::string> otherLines;  // lines between rows that are not rows
  int64_t outOfBounds = -1;
  std::string outOfBoundsStatus;  // "OK" / "FAILED"
  double avgBusBw = 0;
  std::string avgBusBwText;
  std::string avgBusBwStatus;  // "", "OK", "FAILED"
  std::string concluded;
  std::string memoryLine;
  std::string error;                  // "# error: ..." text, empty if none
  std::vector<std::string> failures;  // " .. host pid N: Test failure ..."
};

// Returns false and sets `problem` (quoting the offending line) if the text
// strays from the format.
bool parseNcclTestsOutput(const std::string& text, NcclTestsOutput& out, std::string& problem);

// nccl-tests' value formatting rule: with `width` characters, two decimals if
// they fit, else one, else none, else an exponent. True if `text` follows it.
bool followsColumnRule(const std::string& text, int width);

}  // namespace hcltest
