#include "core/params.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/log.h"

namespace hcl {
namespace {

std::string_view trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n\v\f";
  const auto begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  const auto end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equalsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// A non-empty environment value, or nullopt.
std::optional<std::string> envValue(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

using ConfigEntries = std::unordered_map<std::string, std::string>;

bool isParamName(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool knownName(std::string_view key) {
  for (const ParamSpec& spec : paramTable()) {
    if (key == spec.name || (spec.ncclAlias != nullptr && key == spec.ncclAlias)) return true;
  }
  return false;
}

// Edits (insertions, deletions, substitutions) between two names, ignoring case.
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean HCL_X?)" where a parameter is a likely meaning, else "".
std::string didYouMean(std::string_view name) {
  const std::string near = closestParamName(name);
  return near.empty() ? std::string() : fmt::format("; did you mean {}?", near);
}

// The value after '=': a quoted value keeps everything inside its quotes; an
// unquoted one ends at a '#' that follows whitespace ("eth#0" stays a value).
std::optional<std::string_view> configLineValue(std::string_view rest) {
  rest = trim(rest);
  if (!rest.empty() && (rest.front() == '"' || rest.front() == '\'')) {
    const size_t close = rest.find(rest.front(), 1);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view after = trim(rest.substr(close + 1));
    if (!after.empty() && after.front() != '#') return std::nullopt;
    return rest.substr(1, close - 1);
  }
  for (size_t i = 1; i < rest.size(); ++i) {
    if (rest[i] == '#' && (rest[i - 1] == ' ' || rest[i - 1] == '\t')) return trim(rest.substr(0, i));
  }
  return rest;
}

// NAME=value lines; `problems` gets one text per line that sets nothing
// although it looks meant to. NCCL_ names HCL does not implement are
// skipped quietly: the same file may configure NVIDIA's NCCL too.
ConfigEntries parseConfigFile(const std::string& path, std::vector<std::string>& problems) {
  ConfigEntries entries;
  std::ifstream in(path);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const auto problem = [&](std::string_view why) {
      problems.push_back(fmt::format("config file {} line {}: '{}' {}; ignored", path, number, line, why));
    };
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) {
      problem("is not NAME=value");
      continue;
    }
    const std::string_view key = trim(line.substr(0, eq));
    const auto value = configLineValue(line.substr(eq + 1));
    if (!isParamName(key)) {
      problem("does not start with a parameter name");
    } else if (!value) {
      problem("has an unterminated quote or text after its quoted value");
    } else if (!knownName(key) && !key.starts_with("NCCL_")) {
      problem(fmt::format("names no HCL parameter ({} is not one{})", key, didYouMean(key)));
    } else {
      entries[std::string(key)] = std::string(*value);  // last one wins
    }
  }
  return entries;
}

// Shared state: the parsed config file (re-read when its path, size or mtime
// changes) and the invalid values already warned about.
class ParamState {
 public:
  static ParamState& instance() {
    static ParamState state;
    return state;
  }

  std::optional<std::string> configValue(const std::string& path, const std::string& key) {
    std::lock_guard lock(mutex_);
    refreshLocked(path);
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.empty()) return std::nullopt;
    return it->second;
  }

  std::vector<std::string> configProblems(const std::string& path) {
    std::lock_guard lock(mutex_);
    refreshLocked(path);
    return problems_;
  }

  // True the first time this (name, text) pair is reported.
  bool firstWarning(std::string_view name, const std::string& text) {
    std::lock_guard lock(mutex_);
    return warned_.insert(std::string(name) + '=' + text).second;
  }

 private:
  // Re-reads the file when its path, size or mtime changed.
  void refreshLocked(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      cachedPath_.clear();
      entries_.clear();
      problems_.clear();
      return;
    }
    const int64_t mtimeNs = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (path == cachedPath_ && mtimeNs == cachedMtimeNs_ && st.st_size == cachedSize_) return;
    problems_.clear();
    entries_ = parseConfigFile(path, problems_);
    cachedPath_ = path;
    cachedMtimeNs_ = mtimeNs;
    cachedSize_ = st.st_size;
  }

  std::mutex mutex_;
  std::string cachedPath_;
  int64_t cachedMtimeNs_ = 0;
  off_t cachedSize_ = 0;
  ConfigEntries entries_;
  std::vector<std::string> problems_;
  std::set<std::string> warned_;
};

const ParamSpec& requireParam(std::string_view name) {
  const ParamSpec* spec = findParam(name);
  if (spec == nullptr) throw std::logic_error("unknown HCL parameter " + std::string(name));
  return *spec;
}

const ParamSpec& requireParam(std::string_view name, ParamType type, const char* accessor) {
  const ParamSpec& spec = requireParam(name);
  if (spec.type != type)
    throw std::logic_error(std::string(accessor) + " called for parameter " + spec.name +
                           " of another type");
  return spec;
}

template <typename T, typename Parse>
T parseOrDefault(const ParamSpec& spec, Parse parse, const std::string& accepted = {}) {
  const ParamValue value = resolveParam(spec.name);
  if (auto parsed = parse(value.text)) return *parsed;
  const auto fallback = parse(spec.defaultValue);
  if (!fallback)
    throw std::logic_error(std::string("invalid default of parameter ") + spec.name);
  if (ParamState::instance().firstWarning(spec.name, value.text))
    log::warn(log::Env, "Invalid value '{}' for {} (from {}{}), using default {}", value.text,
              spec.name, paramSourceName(value), accepted, spec.defaultValue);
  return *fallback;
}

}  // namespace

const char* toString(ParamSource s) {
  switch (s) {
    case ParamSource::Default: return "default";
    case ParamSource::Env: return "env";
    case ParamSource::NcclEnv: return "NCCL env";
    case ParamSource::ConfigFile: return "config file";
  }
  return "unknown";
}

const ParamSpec* findParam(std::string_view name) {
  for (const ParamSpec& spec : paramTable())
    if (name == spec.name) return &spec;
  return nullptr;
}

std::string paramSourceName(const ParamValue& value) {
  std::string name = toString(value.source);
  const bool viaAlias = value.source == ParamSource::NcclEnv ||
                        (value.source == ParamSource::ConfigFile && value.origin.starts_with("NCCL_"));
  if (viaAlias) name += " (" + value.origin + ")";
  return name;
}

std::string paramConfigFilePath() {
  if (auto v = envValue("HCL_CONF_FILE")) return *v;
  if (auto v = envValue("NCCL_CONF_FILE")) return *v;
  if (auto home = envValue("HOME")) return *home + "/.hcl.conf";
  return {};
}

std::string closestParamName(std::string_view name) {
  constexpr size_t kMostEdits = 2;
  std::string best;
  size_t bestEdits = kMostEdits + 1;
  for (const ParamSpec& spec : paramTable()) {
    const size_t edits = editDistance(name, spec.name);
    if (edits < bestEdits) {
      best = spec.name;
      bestEdits = edits;
    }
  }
  return best;
}

std::vector<std::string> environmentProblems() {
  // Names of HCL's own tests and tools, not of the library.
  constexpr std::string_view kToolPrefixes[] = {"HCL_TEST_", "HCL_FAKE_", "HCL_PERF_", "HCL_PLOT_"};
  std::vector<std::string> problems;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    if (!name.starts_with("HCL_") || findParam(name) != nullptr) continue;
    if (std::any_of(std::begin(kToolPrefixes), std::end(kToolPrefixes),
                    [&](std::string_view prefix) { return name.starts_with(prefix); })) {
      continue;
    }
    problems.push_back(fmt::format("environment variable {} is no HCL parameter and changes nothing{}", name,
                                   didYouMean(name)));
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

std::vector<std::string> configFileProblems() {
  const std::string path = paramConfigFilePath();
  if (path.empty()) return {};
  const bool named = envValue("HCL_CONF_FILE") || envValue("NCCL_CONF_FILE");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (!named) return {};  // the file in $HOME is optional
    return {fmt::format("config file {} (from {}): {}; no setting is read from it", path,
                        envValue("HCL_CONF_FILE") ? "HCL_CONF_FILE" : "NCCL_CONF_FILE", std::strerror(err))};
  }
  if (!S_ISREG(st.st_mode)) {
    return {fmt::format("config file {} is not a regular file; no setting is read from it", path)};
  }
  return ParamState::instance().configProblems(path);
}

ParamValue resolveParam(std::string_view name) {
  const ParamSpec& spec = requireParam(name);
  if (auto v = envValue(spec.name)) return {*v, ParamSource::Env, spec.name};
  if (spec.ncclAlias != nullptr) {
    if (auto v = envValue(spec.ncclAlias)) return {*v, ParamSource::NcclEnv, spec.ncclAlias};
  }
  // The config file cannot name itself.
  if (name != "HCL_CONF_FILE") {
    const std::string path = paramConfigFilePath();
    if (!path.empty()) {
      auto& state = ParamState::instance();
      if (auto v = state.configValue(path, spec.name)) return {*v, ParamSource::ConfigFile, spec.name};
      if (spec.ncclAlias != nullptr) {
        if (auto v = state.configValue(path, spec.ncclAlias))
          return {*v, ParamSource::ConfigFile, spec.ncclAlias};
      }
    }
  }
  return {spec.defaultValue, ParamSource::Default, {}};
}

std::optional<int64_t> parseParamInt(std::string_view text) {
  text = trim(text);
  if (text.empty()) return std::nullopt;
  int shift = 0;
  switch (text.back()) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) text.remove_suffix(1);
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  const int64_t factor = int64_t{1} << shift;
  if (number > std::numeric_limits<int64_t>::max() / factor ||
      number < std::numeric_limits<int64_t>::min() / factor)
    return std::nullopt;
  return number * factor;
}

std::optional<bool> parseParamBool(std::string_view text) {
  text = trim(text);
  for (std::string_view t : {"1", "true", "yes", "on"})
    if (equalsNoCase(text, t)) return true;
  for (std::string_view f : {"0", "false", "no", "off"})
    if (equalsNoCase(text, f)) return false;
  return std::nullopt;
}

namespace {

std::optional<int64_t> parseParamIntFor(const ParamSpec& spec, std::string_view text) {
  auto v = parseParamInt(text);
  if (v && (*v < spec.min || *v > spec.max)) return std::nullopt;
  return v;
}

}  // namespace

bool paramTextAccepted(const ParamSpec& spec, std::string_view text) {
  switch (spec.type) {
    case ParamType::Int: return parseParamIntFor(spec, text).has_value();
    case ParamType::Bool: return parseParamBool(text).has_value();
    case ParamType::String: return true;
  }
  return true;
}

bool paramSetByUser(std::string_view name) {
  const ParamValue value = resolveParam(name);
  const ParamSpec* spec = findParam(name);
  return value.source != ParamSource::Default && spec != nullptr && paramTextAccepted(*spec, value.text);
}

int64_t paramInt(std::string_view name) {
  const ParamSpec& spec = requireParam(name, ParamType::Int, "paramInt");
  const bool bounded = spec.min != std::numeric_limits<int64_t>::min() || spec.max != std::numeric_limits<int64_t>::max();
  const std::string accepted = bounded ? fmt::format("; accepted: {} to {}", spec.min, spec.max) : "";
  return parseOrDefault<int64_t>(
      spec, [&spec](std::string_view text) { return parseParamIntFor(spec, text); }, accepted);
}

bool paramBool(std::string_view name) {
  return parseOrDefault<bool>(requireParam(name, ParamType::Bool, "paramBool"), &parseParamBool);
}

std::string paramString(std::string_view name) { return resolveParam(name).text; }

}  // namespace hcl
