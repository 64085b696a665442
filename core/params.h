// One table of parameters feeds every knob. Lookup order for a parameter X:
// environment HCL_X, then its NCCL alias (e.g. NCCL_X), then the config file
// (HCL_CONF_FILE, default ~/.hcl.conf, lines "HCL_X=value"), then the default.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcl {

enum class ParamType { Int, Bool, String };

struct ParamSpec {
  const char* name;  // full name, e.g. "HCL_TIMEOUT_MS"
  ParamType type;
  const char* defaultValue;  // textual; "" for unset strings
  const char* help;
  const char* ncclAlias;  // e.g. "NCCL_DEBUG", or nullptr
  // Int: the values accepted; others warn and give the default.
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

enum class ParamSource { Default, Env, NcclEnv, ConfigFile };
const char* toString(ParamSource s);

std::span<const ParamSpec> paramTable();

struct ParamValue {
  std::string text;
  ParamSource source = ParamSource::Default;
  // The environment variable or config-file key that supplied the value
  // (e.g. "NCCL_DEBUG"); empty for the default.
  std::string origin;
};

// The row for a name, or nullptr when there is none.
const ParamSpec* findParam(std::string_view name);
// "default", "env", "NCCL env (NCCL_X)", "config file" or "config file (NCCL_X)".
std::string paramSourceName(const ParamValue& value);
// The config file consulted now: HCL_CONF_FILE, NCCL_CONF_FILE or $HOME/.hcl.conf.
std::string paramConfigFilePath();
// What in the config file sets nothing although it looks meant to (lines
// that are not NAME=value, unknown HCL names), and a file named by
// HCL_CONF_FILE / NCCL_CONF_FILE that cannot be read. One text each; the
// logger warns with them when it reads its settings.
std::vector<std::string> configFileProblems();
// HCL_ names in the environment that are no parameter (a typo sets
// nothing), with the closest parameter name where one is near; names of
// HCL's tests and tools (HCL_TEST_, HCL_FAKE_, HCL_PERF_, HCL_PLOT_) are
// left alone. The logger warns with these when it reads its settings.
std::vector<std::string> environmentProblems();
// The parameter name at most two edits from `name` (any case) that is
// closest, or "" where none is.
std::string closestParamName(std::string_view name);

// Parsers used by paramInt/paramBool, shared with other text-to-value code.
// Decimal with an optional binary K/M/G suffix ("64K" = 65536); nullopt if invalid.
std::optional<int64_t> parseParamInt(std::string_view text);
// 1/0, true/false, yes/no, on/off (any case); nullopt if invalid.
std::optional<bool> parseParamBool(std::string_view text);

// Resolves one parameter now (environment is read on every call, so a
// communicator created after setenv() sees the new value). An empty
// environment value counts as unset. An unknown name, or asking paramInt /
// paramBool for a parameter of another type, throws std::logic_error.
// Invalid text logs one WARN per (name, text) and yields the default.
ParamValue resolveParam(std::string_view name);
// Whether `text` would be used for `spec` (it parses and is within range),
// rather than warned about and replaced by the default.
bool paramTextAccepted(const ParamSpec& spec, std::string_view text);
// Whether the value in effect for `name` is one the user gave (set, and accepted).
bool paramSetByUser(std::string_view name);
int64_t paramInt(std::string_view name);
bool paramBool(std::string_view name);
std::string paramString(std::string_view name);

}  // namespace hcl
