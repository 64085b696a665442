#include "perf/common/report.h"

#include <strings.h>

#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <ctime>
#include <sstream>

#include "hcl.h"

namespace hcl::perf {
namespace {

constexpr const char* kNcclTestsVersion = "2.19.6";
constexpr int kJsonVersion = 3;
constexpr const char* kTimeFormat = "%Y-%m-%d %H:%M:%S";

std::string now() {
  char buffer[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buffer, sizeof buffer, kTimeFormat, &tm);
  return buffer;
}

std::string hclVersionText() {
  int v = 0;
  hclGetVersion(&v);
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

bool hasJsonSuffix(const std::string& path) {
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && slash > dot) || dot + 1 == path.size()) return false;
  return strcasecmp(path.c_str() + dot + 1, "json") == 0;
}

std::string memoryText(double amount) {
  const char* unit = " B";
  if (std::fabs(amount) >= 1024.0 * 1024.0 * 1024.0) {
    unit = " GB";
    amount /= 1024.0 * 1024.0 * 1024.0;
  } else if (std::fabs(amount) >= 1024.0 * 1024.0) {
    unit = " MB";
    amount /= 1024.0 * 1024.0;
  } else if (std::fabs(amount) >= 1024.0) {
    unit = " KB";
    amount /= 1024.0;
  }
  const int precision = std::fabs(amount) < 10.0 ? 2 : std::fabs(amount) < 100.0 ? 1 : 0;
  char text[64];
  std::snprintf(text, sizeof text, "%.*f%s", precision, amount, unit);
  return text;
}

}  // namespace

std::string formatColumn(double value, int width) {
  char text[64];
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(text, sizeof text, format, width, value) <= width) return text;
  }
  std::snprintf(text, sizeof text, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return text;
}

Reporter::Reporter(bool enabled, const Options& options, std::string program)
    : enabled_(enabled), options_(options), program_(std::move(program)) {}

Reporter::~Reporter() {
  if (jsonFile_) {
    json_->closeAll();
    std::fclose(jsonFile_);
  }
}

void Reporter::print(const char* format, ...) {
  if (!enabled_) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

void Reporter::timestamp() { print("%21s", now().c_str()); }

void Reporter::openJson(int argc, char** argv, char** envp) {
  if (!enabled_ || options_.outputFile.empty() || !hasJsonSuffix(options_.outputFile)) return;
  std::string path = options_.outputFile;
  for (int attempt = 0; !jsonFile_; ++attempt) {
    jsonFile_ = std::fopen(path.c_str(), "wx");
    if (jsonFile_) break;
    if (errno != EEXIST) {
      std::printf("# skipping json output; %s not accessible\n", path.c_str());
      return;
    }
    path = options_.outputFile + "." + std::to_string(attempt);
  }
  std::printf("# Writing JSON output to %s\n", path.c_str());
  json_ = std::make_unique<JsonWriter>(jsonFile_);
  json_->beginObject();
  json_->key("version");
  json_->integer(kJsonVersion);
  json_->key("start_time");
  json_->string(now());
  json_->key("args");
  json_->beginList();
  for (int i = 0; i < argc; ++i) json_->string(argv[i]);
  json_->endList();
  json_->key("env");
  json_->beginList();
  for (char** e = envp; e && *e; ++e) json_->string(*e);
  json_->endList();
  json_->key("nccl_version");
  json_->integer(HCL_NCCL_VERSION_CODE);
  json_->key("hcl_version");
  json_->string(hclVersionText());
}

void Reporter::runHeader() {
  const Options& o = options_;
  const std::string version = std::string(kNcclTestsVersion) + "-hcl-" + hclVersionText();
  print("# nccl-tests version %s nccl-headers=%d nccl-library=%d\n", version.c_str(), HCL_NCCL_VERSION_CODE,
        HCL_NCCL_VERSION_CODE);
  print("# Collective test starting: %s\n", program_.c_str());
  const bool factor = o.stepFactor > 1;
  print(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: %d unalign: %d\n",
      o.nThreads, o.nGpus, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(factor ? o.stepFactor : o.stepBytes), factor ? "factor" : "bytes", o.warmupIters, o.iters,
      o.aggIters, o.check, 0, o.unalign);
  if (o.blocking == 1) print("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (o.blocking == 2) print("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (o.blocking == 3) {
    print("# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n");
  }
  if (o.perIterTiming) {
    print("# Per-Iteration Report: host timer around each iteration; i_* uses max over process rows");
    if (o.perIterSkip) print("; summary skips first %d iterations", o.perIterSkip);
    print(" \n");
  }
  if (o.parallelInit) print("# Parallel Init Enabled: threads call into hclCommInitRank concurrently \n");
  print("#\n");
  if (json_) {
    json_->key("config");
    json_->beginObject();
    json_->key("nthreads");
    json_->integer(o.nThreads);
    json_->key("ngpus");
    json_->integer(o.nGpus);
    json_->key("minimum_bytes");
    json_->unsignedInteger(o.minBytes);
    json_->key("maximum_bytes");
    json_->unsignedInteger(o.maxBytes);
    json_->key(factor ? "step_factor" : "step_bytes");
    json_->unsignedInteger(factor ? o.stepFactor : o.stepBytes);
    json_->key("warmup_iters");
    json_->integer(o.warmupIters);
    json_->key("iterations");
    json_->integer(o.iters);
    json_->key("aggregated_iterations");
    json_->integer(o.aggIters);
    json_->key("validation");
    json_->integer(o.check);
    json_->key("graph");
    json_->integer(0);
    json_->key("blocking_collectives");
    json_->boolString(o.blocking != 0);
    json_->key("per_iter_timing");
    json_->boolString(o.perIterTiming != 0);
    json_->key("per_iter_skip");
    json_->integer(o.perIterSkip);
    json_->key("parallel_init");
    json_->boolString(o.parallelInit != 0);
  }
  print("# Using devices\n");
}

void Reporter::devices(const std::vector<DeviceLine>& lines) {
  for (const DeviceLine& d : lines) print("%s\n", formatDeviceLine(d).c_str());
  if (!json_) return;
  json_->key("devices");
  json_->beginList();
  for (const DeviceLine& d : lines) {
    json_->beginObject();
    json_->key("rank");
    json_->integer(d.rank);
    json_->key("group");
    json_->integer(d.group);
    json_->key("pid");
    json_->integer(d.pid);
    json_->key("hostname");
    json_->string(d.host);
    json_->key("device");
    json_->integer(d.device);
    json_->key("device_hex");
    json_->string(d.busId);
    json_->key("device_info");
    json_->string(d.name);
    json_->endObject();
  }
  json_->endList();
  json_->endObject();  // config
}

void Reporter::tableHeader() {
  const bool ts = options_.reportTimestamps != 0;
  const char* tsLabel = ts ? "timestamp" : "";
  const int tsPad = ts ? 19 : 0;
  const char* tsFormat = ts ? kTimeFormat : "";
  const char* time = options_.reportCputime ? "cputime" : "time";
  const bool details = options_.hclDetails != 0;
  print("#\n");
  if (options_.perIterTiming) {
    print(
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                "
        "in-place (+ per-iteration)\n",
        "", "", "", "", "");
    print(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  "
        "%7s %*s",
        "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
        time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", tsPad, tsLabel);
    if (details) print("  %9s  %s", "algo", "transports");
    print("\n");
    print(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  "
        "%7s %*s",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", "(us)",
        "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", tsPad, tsFormat);
  } else {
    print("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
          "", "");
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s", "size", "count", "type", "redop",
          "root", time, "algbw", "busbw", "#wrong", time, "algbw", "busbw", "#wrong", tsPad, tsLabel);
    if (details) print("  %9s  %s", "algo", "transports");
    print("\n");
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s", "(B)", "(elements)", "", "", "",
          "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", tsPad, tsFormat);
  }
  if (details) print("  %9s  %s", "", "");
  print("\n");
  if (json_) {
    json_->key("results");
    json_->beginList();
  }
}

void Reporter::rowStart(size_t bytes, size_t count, const char* typeName, const char* opName, int root) {
  char rootName[32];
  std::snprintf(rootName, sizeof rootName, "%6i", root);
  print("%12li  %12li  %8s  %6s  %6s", static_cast<long>(bytes), static_cast<long>(count), typeName, opName, rootName);
  if (!json_) return;
  json_->beginObject();
  json_->key("size");
  json_->unsignedInteger(bytes);
  json_->key("count");
  json_->unsignedInteger(count);
  json_->key("type");
  json_->string(typeName);
  json_->key("redop");
  json_->string(opName);
  json_->key("root");
  json_->string(rootName);
}

void Reporter::rowHalf(double timeUsec, double algBw, double busBw, bool checked, int64_t wrong, bool outOfPlace) {
  const std::string timeText = formatColumn(timeUsec, 7);
  const std::string algText = formatColumn(algBw, 6);
  const std::string busText = formatColumn(busBw, 6);
  if (checked) {
    print("  %7s  %6s  %6s  %6g", timeText.c_str(), algText.c_str(), busText.c_str(), static_cast<double>(wrong));
  } else {
    print("  %7s  %6s  %6s    N/A", timeText.c_str(), algText.c_str(), busText.c_str());
  }
  if (!outOfPlace && options_.reportTimestamps && !options_.perIterTiming) timestamp();
  if (!json_) return;
  json_->key(outOfPlace ? "out_of_place" : "in_place");
  json_->beginObject();
  json_->key(options_.reportCputime ? "cpu_time" : "time");
  json_->number(timeUsec);
  json_->key("alg_bw");
  json_->number(algBw);
  json_->key("bus_bw");
  json_->number(busBw);
  json_->key("nwrong");
  if (checked) {
    json_->number(static_cast<double>(wrong));
  } else {
    json_->null();
  }
  json_->endObject();
}

void Reporter::rowPerIteration(const IterStats& s, const std::vector<double>& times, int skipped, bool outOfPlace) {
  print("  %7s  %7s  %7s  %7s", formatColumn(s.min * 1e6, 7).c_str(), formatColumn(s.max * 1e6, 7).c_str(),
        formatColumn(s.p99 * 1e6, 7).c_str(), formatColumn(s.cvPercent(), 7).c_str());
  if (!outOfPlace && options_.reportTimestamps) timestamp();
  if (!json_) return;
  json_->key(outOfPlace ? "out_of_place_per_iter" : "in_place_per_iter");
  json_->beginObject();
  json_->key("skipped_iterations");
  json_->integer(skipped);
  const std::pair<const char*, double> fields[] = {{"min_us", s.min},    {"max_us", s.max}, {"avg_us", s.avg},
                                                   {"p50_us", s.p50},    {"p95_us", s.p95}, {"p99_us", s.p99},
                                                   {"stdev_us", s.stdev}};
  for (const auto& [name, value] : fields) {
    json_->key(name);
    json_->number(value * 1e6);
  }
  json_->key("cv_pct");
  json_->number(s.cvPercent());
  json_->key("times_us");
  json_->beginList();
  for (double t : times) json_->number(t * 1e6);
  json_->endList();
  json_->endObject();
}

void Reporter::rowDetails(const std::string& algorithm, const std::string& transports, double modelUs) {
  print("  %9s  %s", algorithm.c_str(), transports.c_str());
  if (!json_) return;
  json_->key("hcl_algorithm");
  json_->string(algorithm);
  json_->key("hcl_transports");
  json_->string(transports);
  json_->key("hcl_model_us");
  json_->number(modelUs);
}

void Reporter::rowEnd() {
  print("\n");
  if (!json_) return;
  json_->key("actual_iterations");
  json_->integer(options_.iters);
  json_->key("experiment_name");
  json_->string("");
  json_->endObject();
}

void Reporter::footer(int64_t errors, double avgBusBw, double minBw) {
  if (json_) json_->endList();  // results
  print("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(errors), errors ? "FAILED" : "OK");
  print("# %-20s : %g %s\n", "Avg bus bandwidth", avgBusBw,
        minBw < 0 ? "" : (avgBusBw < minBw * 0.9 ? "FAILED" : "OK"));
  print("#\n");
  print("# Collective test concluded: %s\n", program_.c_str());
  if (!json_) return;
  json_->key("out_of_bounds");
  json_->beginObject();
  json_->key("count");
  json_->integer(errors);
  json_->key("okay");
  json_->boolString(errors == 0);
  json_->endObject();
  json_->key("average_bus_bandwidth");
  json_->beginObject();
  json_->key("bandwidth");
  json_->number(avgBusBw);
  json_->key("okay");
  if (minBw < 0) {
    json_->string("unchecked");
  } else {
    json_->boolString(avgBusBw >= minBw * 0.9);
  }
  json_->endObject();
}

void Reporter::memory(const MemoryUsage& usage) {
  const std::pair<const char*, double> parts[] = {{"Initialization", usage.initialization},
                                                  {"User-Allocated", usage.userAllocated},
                                                  {"Collective", usage.collective}};
  std::ostringstream text;
  double total = 0;
  for (size_t i = 0; i < std::size(parts); ++i) {
    text << parts[i].first << " " << memoryText(parts[i].second) << " ";
    if (i + 1 < std::size(parts)) text << "| ";
    total += parts[i].second;
  }
  text << "| Total  " << memoryText(total);
  print("# %-20s : %s\n", "Host memory usage", text.str().c_str());
}

void Reporter::finish(const std::string& lastError) {
  print("#\n");
  if (!lastError.empty()) {
    print("# error: %s\n", lastError.c_str());
  } else {
    print("\n");
  }
  if (!json_) return;
  json_->key("errors");
  json_->beginList();
  json_->string(lastError);
  json_->endList();
  json_->key("end_time");
  json_->string(now());
  json_->closeAll();
  std::fclose(jsonFile_);
  jsonFile_ = nullptr;
}

}  // namespace hcl::perf
