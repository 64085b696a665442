#include "perf_checks.h"

#include <cmath>
#include <stdexcept>

namespace hcltest {
namespace {

double plain(double count, double elt, int) { return count * elt; }
double timesRanks(double count, double elt, int n) { return count * elt * n; }
double timesOthers(double count, double elt, int n) { return count * elt * (n - 1); }
double one(int) { return 1.0; }
double ring(int n) { return static_cast<double>(n - 1) / n; }
double allReduceFactor(int n) { return 2.0 * (n - 1) / n; }

const std::vector<std::string> kOps = {"sum", "prod", "max", "min", "avg", "mulsum"};

// Two printed values agree if they differ by no more than their rounding.
bool close(double printed, double exact, double tolerance) {
  return std::fabs(printed - exact) <= tolerance + 0.01 * std::fabs(exact);
}

}  // namespace

const std::vector<CollectiveFacts>& allCollectives() {
  static const std::vector<CollectiveFacts> facts = {
      {"all_reduce_perf", true, false, true, false, false, plain, allReduceFactor},
      {"all_gather_perf", false, false, true, true, false, timesRanks, ring},
      {"broadcast_perf", false, true, true, false, false, plain, one},
      {"reduce_scatter_perf", true, false, true, true, false, timesRanks, ring},
      {"reduce_perf", true, true, true, false, false, plain, one},
      {"alltoall_perf", false, false, false, true, false, timesRanks, ring},
      {"gather_perf", false, true, true, true, false, timesRanks, ring},
      {"scatter_perf", false, true, true, true, false, timesRanks, ring},
      {"sendrecv_perf", true, false, false, false, false, plain, one},  // lists the operators, as nccl-tests
      {"hypercube_perf", false, false, true, true, true, timesOthers, one},
  };
  return facts;
}

const CollectiveFacts& collectiveFacts(const std::string& binary) {
  for (const CollectiveFacts& c : allCollectives()) {
    if (c.binary == binary) return c;
  }
  throw std::invalid_argument("unknown perf binary " + binary);
}

const std::vector<std::string>& typeNames() {
  static const std::vector<std::string> names = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                                 "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return names;
}

size_t typeSizeOf(const std::string& t) {
  if (t == "int8" || t == "uint8" || t == "f8e4m3" || t == "f8e5m2") return 1;
  if (t == "half" || t == "bfloat16") return 2;
  if (t == "int32" || t == "uint32" || t == "float") return 4;
  return 8;
}

std::vector<std::string> sweepArgs(const CollectiveFacts& c, const SweepSpec& s) {
  std::vector<std::string> args = {"-b", std::to_string(s.minBytes), "-e", std::to_string(s.maxBytes),
                                   "-f", std::to_string(s.factor),   "-w", std::to_string(s.warmup),
                                   "-n", std::to_string(s.iters)};
  if (s.nThread > 1) args.insert(args.end(), {"-t", std::to_string(s.nThread)});
  if (s.nGpus > 1) args.insert(args.end(), {"-g", std::to_string(s.nGpus)});
  if (s.cycles != 1) args.insert(args.end(), {"-N", std::to_string(s.cycles)});
  if (s.allTypesAndOps) args.insert(args.end(), {"-d", "all", "-o", "all"});
  if (c.rooted) args.insert(args.end(), {"-r", std::to_string(s.root)});
  return args;
}

std::string checkCorrectRun(const NcclTestsOutput& o, const CollectiveFacts& c, const SweepSpec& s) {
  std::string problems;
  auto problem = [&](const std::string& p) { problems += p + "\n"; };
  if (o.collective != c.binary) problem("collective '" + o.collective + "'");
  if (o.concluded != c.binary) problem("concluded '" + o.concluded + "'");
  if (o.nThread != s.nThread || o.nGpus != s.nGpus) problem("nThread/nGpus");
  if (o.minBytes != s.minBytes || o.maxBytes != s.maxBytes || o.step != s.factor || o.stepKind != "factor") {
    problem("sizes in the header");
  }
  if (o.iters != s.iters || o.warmupIters != s.warmup || o.aggIters != 1 || o.validation != 1 || o.graph != 0) {
    problem("iteration counts in the header");
  }
  if (static_cast<int>(o.devices.size()) != s.nranks) {
    problem(std::to_string(o.devices.size()) + " device lines for " + std::to_string(s.nranks) + " ranks");
  }
  for (size_t r = 0; r < o.devices.size(); ++r) {
    const NcclTestsDevice& d = o.devices[r];
    if (d.rank != static_cast<int>(r) || d.group != 0 || d.device != static_cast<int>(r) || d.pid <= 0 ||
        d.busId != "0000:00:00" || d.name.rfind("CPU", 0) != 0) {
      problem("device line of rank " + std::to_string(r));
    }
  }

  const int n = s.nranks;
  const bool skipped = c.powerOfTwo && (n & (n - 1)) != 0;
  std::vector<std::string> types = s.allTypesAndOps ? typeNames() : std::vector<std::string>{"float"};
  std::vector<std::string> ops =
      c.reduces ? (s.allTypesAndOps ? kOps : std::vector<std::string>{"sum"}) : std::vector<std::string>{"none"};
  size_t row = 0;
  for (int cycle = 0; cycle < s.cycles && !skipped; ++cycle) {
    for (const std::string& type : types) {
      for (const std::string& op : ops) {
        for (int64_t size = s.minBytes; size <= s.maxBytes; size *= s.factor) {
          if (row >= o.rows.size()) {
            problem("missing rows from " + type + " " + op + " " + std::to_string(size));
            return problems;
          }
          const NcclTestsRow& r = o.rows[row++];
          const auto elt = static_cast<int64_t>(typeSizeOf(type));
          int64_t count = size / elt;
          int64_t bytes = count * elt;
          if (c.sliced) {
            const int64_t align = elt >= 16 ? 1 : 16 / elt;
            count = count / n / align * align;
            bytes = count * n * elt;
          }
          const std::string where = "row '" + r.line + "': ";
          if (r.type != type || r.redop != op || r.bytes != bytes || r.count != count ||
              r.root != (c.rooted ? s.root : -1)) {
            problem(where + "expected " + type + " " + op + " bytes " + std::to_string(bytes) + " count " +
                    std::to_string(count));
            continue;
          }
          if (!r.outOfPlace.checked || r.outOfPlace.wrong != 0) problem(where + "out-of-place #wrong");
          if (r.inPlace.checked != c.inPlaceChecked || r.inPlace.wrong != 0) problem(where + "in-place #wrong");
          for (const NcclTestsHalf* h : {&r.outOfPlace, &r.inPlace}) {
            const double alg =
                c.algBytes(static_cast<double>(count), static_cast<double>(elt), n) / 1e9 / (h->timeUs * 1e-6);
            const double factor = c.busFactor(n);
            if (!close(h->algBw, alg, 0.006)) problem(where + "algbw " + h->algBwText + " for time " + h->timeText);
            if (!close(h->busBw, h->algBw * factor, 0.006 * (1 + factor))) problem(where + "busbw factor");
          }
        }
      }
    }
  }
  if (row != o.rows.size()) problem(std::to_string(o.rows.size() - row) + " unexpected rows");
  if (skipped) {
    bool said = false;
    for (const std::string& l : o.otherLines)
      said = said || l == "nRanks " + std::to_string(n) + " is not a power of 2, skipping";
    if (!said) problem("no 'not a power of 2' line");
  }
  if (o.outOfBounds != 0 || o.outOfBoundsStatus != "OK") problem("Out of bounds values");
  if (o.avgBusBwStatus != "") problem("Avg bus bandwidth status '" + o.avgBusBwStatus + "'");
  if (!o.error.empty()) problem("error line: " + o.error);
  if (!o.failures.empty()) problem("failure line: " + o.failures.front());
  return problems;
}

}  // namespace hcltest
