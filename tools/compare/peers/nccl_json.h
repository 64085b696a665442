// Writes a sweep as nccl-tests' -J JSON document (one collective per file),
// so tools/plot and any nccl-tests JSON consumer can read hcl_bench output.
// Only the out-of-place column is measured; "in_place" is null.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "sweep.h"

namespace nccl_json {

struct Device {
  int rank;
  int pid;
  std::string hostname;
};

inline std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
  }
  return out + "\"";
}

inline std::string now() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

struct Document {
  std::vector<std::string> args;
  std::vector<std::string> env;  // only HCL_ and NCCL_ variables
  int ncclVersion = 0;
  const sweep_options* options = nullptr;
  int warmupIters = 0;
  int maxIters = 0;
  std::vector<Device> devices;
  std::vector<sweep_row> rows;
  std::string startTime = now();
};

inline bool write(const std::string& path, const Document& d) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  auto list = [&](const std::vector<std::string>& items) {
    std::string s = "[";
    for (size_t i = 0; i < items.size(); ++i) s += (i ? "," : "") + quote(items[i]);
    return s + "]";
  };
  std::fprintf(f, "{\"version\":1,\"start_time\":%s,\"args\":%s,\"env\":%s,\"nccl_version\":%d,",
               quote(d.startTime).c_str(), list(d.args).c_str(), list(d.env).c_str(), d.ncclVersion);
  std::fprintf(f,
               "\"config\":{\"nthreads\":1,\"ngpus\":1,\"minimum_bytes\":%zu,\"maximum_bytes\":%zu,"
               "\"step_factor\":2,\"warmup_iters\":%d,\"iterations\":%d,\"aggregated_iterations\":1,"
               "\"validation\":1,\"graph\":0,\"blocking_collectives\":\"false\",\"parallel_init\":\"false\","
               "\"devices\":[",
               d.options->minBytes, d.options->maxBytes, d.warmupIters, d.maxIters);
  for (size_t i = 0; i < d.devices.size(); ++i) {
    const Device& dev = d.devices[i];
    std::fprintf(f,
                 "%s{\"rank\":%d,\"group\":0,\"pid\":%d,\"hostname\":%s,\"device\":0,\"device_hex\":\"cpu\","
                 "\"device_info\":\"CPU\"}",
                 i ? "," : "", dev.rank, dev.pid, quote(dev.hostname).c_str());
  }
  std::fprintf(f, "]},\"results\":[");
  double bwSum = 0;
  long failedRows = 0;
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const sweep_row& r = d.rows[i];
    const bool reduces = r.coll == SWEEP_ALLREDUCE || r.coll == SWEEP_REDUCESCATTER || r.coll == SWEEP_REDUCE;
    const bool rooted = r.coll == SWEEP_BROADCAST || r.coll == SWEEP_REDUCE;
    std::fprintf(f,
                 "%s{\"size\":%zu,\"count\":%zu,\"type\":\"float\",\"redop\":\"%s\",\"root\":\"%6d\","
                 "\"out_of_place\":{\"time\":%f,\"alg_bw\":%f,\"bus_bw\":%f,\"nwrong\":%f},\"in_place\":null,"
                 "\"actual_iterations\":%d,\"experiment_name\":\"%s\"}",
                 i ? "," : "", r.bytes, r.count, reduces ? "sum" : "none", rooted ? SWEEP_ROOT : -1, r.timeUs,
                 r.algbw, r.busbw, static_cast<double>(r.wrong), r.iters, sweep_coll_names[r.coll]);
    bwSum += r.busbw;
    failedRows += r.wrong != 0;
  }
  const double avg = d.rows.empty() ? 0.0 : bwSum / static_cast<double>(d.rows.size());
  std::fprintf(f,
               "],\"out_of_bounds\":{\"count\":%ld,\"okay\":\"%s\"},"
               "\"average_bus_bandwidth\":{\"bandwidth\":%f,\"okay\":\"unchecked\"},\"end_time\":%s}\n",
               failedRows, failedRows ? "false" : "true", avg, quote(now()).c_str());
  return std::fclose(f) == 0;
}

}  // namespace nccl_json
