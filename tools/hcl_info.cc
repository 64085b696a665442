// hcl-info: prints the HCL version, the features of this build and every
// parameter with its current value and where that value came from.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "collectives/reduce/narrow_simd.h"
#include "core/cpu_family.h"
#include "core/features.h"
#include "transports/ib/ib_transport.h"
#include "transports/net_plugin/net_plugin_transport.h"
#include "transports/ofi/ofi_transport.h"
#include "core/params.h"
#include "hcl.h"

namespace {

constexpr std::string_view kUsage =
    "Usage: hcl-info [--help]\n"
    "\n"
    "Prints the HCL version, the features of this build and every parameter\n"
    "with its current value, its source (default, env, NCCL env, config file),\n"
    "its NCCL alias, its type and a description.\n"
    "\n"
    "Parameters are read from the environment (HCL_ name, then NCCL_ alias),\n"
    "then from the config file (HCL_CONF_FILE, default ~/.hcl.conf), then the\n"
    "built-in default.\n"
    "\n"
    "Options:\n"
    "  -h, --help   show this help and exit\n";

const char* typeName(hcl::ParamType t) {
  switch (t) {
    case hcl::ParamType::Int: return "int";
    case hcl::ParamType::Bool: return "bool";
    case hcl::ParamType::String: return "string";
  }
  return "?";
}

// The text as resolved; an int or bool that does not parse, or is out of
// range, is shown with the default used in its place.
std::string displayValue(const hcl::ParamSpec& spec, const std::string& text) {
  if (text.empty()) return "\"\"";
  if (hcl::paramTextAccepted(spec, text)) return text;
  return fmt::format("{} (invalid, using {})", text, spec.defaultValue);
}

using Row = std::vector<std::string>;

void printTable(const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const Row& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const Row& row : rows) {
    std::string line = "  ";
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
    }
    fmt::print("{}\n", line);
  }
}

void printInfo() {
  constexpr int nccl = HCL_NCCL_VERSION_CODE;
  fmt::print("HCL version {}.{}.{} (NCCL API {}.{}.{})\n\n", HCL_MAJOR, HCL_MINOR, HCL_PATCH,
             nccl / 10000, nccl % 10000 / 100, nccl % 100);

  fmt::print("Features\n");
  for (const std::string& feature : hcl::hclBuildFeatures()) fmt::print("  {}\n", feature);
  fmt::print("  {}\n", hcl::describeOfiSupport());
  fmt::print("  {}\n", hcl::describeNetPluginSupport());
  fmt::print("  {}\n", hcl::describeIbSupport());
  fmt::print("  cpu family: {} (sizes measured per family apply where ranks reach peers' buffers)\n",
             hcl::toString(hcl::hostCpuFamily()));
  fmt::print("  reduction kernels: {}\n", hcl::narrow_simd::levelName());

  const std::string conf = hcl::paramConfigFilePath();
  struct stat st {};
  const bool exists = !conf.empty() && ::stat(conf.c_str(), &st) == 0;
  fmt::print("\nConfig file: {} ({})\n", conf.empty() ? "none" : conf,
             !exists ? "absent" : S_ISREG(st.st_mode) ? "found" : "not a regular file, not read");
  for (const std::string& problem : hcl::configFileProblems()) fmt::print("  {}\n", problem);
  const std::vector<std::string> environment = hcl::environmentProblems();
  if (!environment.empty()) {
    fmt::print("\nEnvironment\n");
    for (const std::string& problem : environment) fmt::print("  {}\n", problem);
  }

  fmt::print("\nParameters\n");
  std::vector<Row> rows{{"NAME", "VALUE", "SOURCE", "NCCL ALIAS", "TYPE", "DESCRIPTION"}};
  for (const hcl::ParamSpec& spec : hcl::paramTable()) {
    const hcl::ParamValue value = hcl::resolveParam(spec.name);
    rows.push_back({spec.name, displayValue(spec, value.text),
                    hcl::paramSourceName(value), spec.ncclAlias ? spec.ncclAlias : "-",
                    typeName(spec.type), spec.help});
  }
  printTable(rows);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    }
    fmt::print(stderr, "hcl-info: unknown option '{}'\n\n{}", arg, kUsage);
    return 2;
  }
  printInfo();
  return 0;
}
