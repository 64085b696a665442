#include "nccl_tests_output.h"

#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace hcltest {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  return buffer;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

bool parseHalf(const std::vector<std::string>& tok, size_t at, NcclTestsHalf& h) {
  if (tok.size() < at + 4) return false;
  h.timeText = tok[at];
  h.algBwText = tok[at + 1];
  h.busBwText = tok[at + 2];
  h.timeUs = std::strtod(h.timeText.c_str(), nullptr);
  h.algBw = std::strtod(h.algBwText.c_str(), nullptr);
  h.busBw = std::strtod(h.busBwText.c_str(), nullptr);
  h.checked = tok[at + 3] != "N/A";
  if (h.checked) {
    char* end = nullptr;
    h.wrong = static_cast<int64_t>(std::strtod(tok[at + 3].c_str(), &end));
    if (*end != '\0') return false;
  }
  return true;
}

std::string renderHalf(const NcclTestsHalf& h) {
  if (!h.checked) return format("  %7s  %6s  %6s    N/A", h.timeText.c_str(), h.algBwText.c_str(), h.busBwText.c_str());
  return format("  %7s  %6s  %6s  %6g", h.timeText.c_str(), h.algBwText.c_str(), h.busBwText.c_str(),
                static_cast<double>(h.wrong));
}

bool halfFollowsRules(const NcclTestsHalf& h) {
  return followsColumnRule(format("%7s", h.timeText.c_str()), 7) &&
         followsColumnRule(format("%6s", h.algBwText.c_str()), 6) &&
         followsColumnRule(format("%6s", h.busBwText.c_str()), 6);
}

// With -I, four per-iteration columns follow each half.
bool parseRow(const std::string& line, bool perIteration, NcclTestsRow& row) {
  const std::vector<std::string> tok = tokens(line);
  const size_t inPlaceAt = perIteration ? 13 : 9;
  if (tok.size() < inPlaceAt + 4) return false;
  char* end = nullptr;
  row.bytes = std::strtoll(tok[0].c_str(), &end, 10);
  if (*end) return false;
  row.count = std::strtoll(tok[1].c_str(), &end, 10);
  if (*end) return false;
  row.type = tok[2];
  row.redop = tok[3];
  row.root = static_cast<int>(std::strtol(tok[4].c_str(), &end, 10));
  if (*end) return false;
  if (!parseHalf(tok, 5, row.outOfPlace) || !parseHalf(tok, inPlaceAt, row.inPlace)) return false;
  std::string perIter;
  if (perIteration) {
    row.outOfPlacePerIteration.assign(tok.begin() + 9, tok.begin() + 13);
    for (const std::string& t : row.outOfPlacePerIteration) {
      if (!followsColumnRule(format("%7s", t.c_str()), 7)) return false;
      perIter += format("  %7s", t.c_str());
    }
  }
  const std::string rendered =
      format("%12lli  %12lli  %8s  %6s  %6i", static_cast<long long>(row.bytes), static_cast<long long>(row.count),
             row.type.c_str(), row.redop.c_str(), row.root) +
      renderHalf(row.outOfPlace) + perIter + renderHalf(row.inPlace);
  if (!startsWith(line, rendered)) return false;
  if (!halfFollowsRules(row.outOfPlace) || !halfFollowsRules(row.inPlace)) return false;
  row.tail = line.substr(rendered.size());
  row.line = line;
  return true;
}

bool parseDevice(const std::string& line, NcclTestsDevice& d) {
  char host[1024] = {}, bus[128] = {}, name[1024] = {};
  if (std::sscanf(line.c_str(), "#  Rank %d Group %d Pid %d on %1023s device %d [%127[^]]] %1023[^\n]", &d.rank,
                  &d.group, &d.pid, host, &d.device, bus, name) != 7) {
    return false;
  }
  d.host = host;
  d.busId = bus;
  d.name = name;
  return line == format("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s", d.rank, d.group, d.pid, host,
                        d.device, bus, name);
}

bool parseConfigLine(const std::string& line, NcclTestsOutput& o) {
  long long minB = 0, maxB = 0, step = 0;
  char kind[16] = {};
  if (std::sscanf(line.c_str(),
                  "# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %lld(%15[a-z]) warmup iters: %d iters: %d "
                  "agg iters: %d validation: %d graph: %d unalign: %d",
                  &o.nThread, &o.nGpus, &minB, &maxB, &step, kind, &o.warmupIters, &o.iters, &o.aggIters, &o.validation,
                  &o.graph, &o.unalign) != 12) {
    return false;
  }
  o.minBytes = minB;
  o.maxBytes = maxB;
  o.step = step;
  o.stepKind = kind;
  return line == format(
                     "# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d "
                     "agg iters: %d validation: %d graph: %d unalign: %d",
                     o.nThread, o.nGpus, minB, maxB, step, kind, o.warmupIters, o.iters, o.aggIters, o.validation,
                     o.graph, o.unalign);
}

// The table header of a run without -I: the first line literally, the other
// two up to the end of the in-place columns (-S and -H add columns after).
bool checkTableHeader(const std::vector<std::string>& h, std::string& problem) {
  if (h[1].find("i_min") != std::string::npos) return true;  // -I layout: not checked here
  const std::string first =
      format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          ", "", "", "",
             "", "");
  if (h[0] != first) {
    problem = "table header line 1 differs: '" + h[0] + "'";
    return false;
  }
  const char* time = h[1].find("cputime") != std::string::npos ? "cputime" : "time";
  const std::string second =
      format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s ", "size", "count", "type", "redop",
             "root", time, "algbw", "busbw", "#wrong", time, "algbw", "busbw", "#wrong");
  const std::string third =
      format("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s ", "(B)", "(elements)", "", "", "",
             "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  if (!startsWith(h[1], second)) {
    problem = "table header line 2 differs: '" + h[1] + "'";
    return false;
  }
  if (!startsWith(h[2], third)) {
    problem = "table header line 3 differs: '" + h[2] + "'";
    return false;
  }
  return true;
}

}  // namespace

bool followsColumnRule(const std::string& text, int width) {
  if (static_cast<int>(text.size()) != width) return false;
  std::string s =
      text.substr(text.find_first_not_of(' ') == std::string::npos ? text.size() : text.find_first_not_of(' '));
  if (s.empty()) return false;
  const size_t e = s.find('e');
  if (e != std::string::npos) {
    // Only when even "%.0f" would not fit: the value has more than `width` digits.
    return std::atoi(s.c_str() + e + 1) + 1 > width;
  }
  const size_t dot = s.find('.');
  const int intLen = static_cast<int>(dot == std::string::npos ? s.size() : dot);
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(s.size() - dot - 1);
  const int expected = intLen + 3 <= width ? 2 : intLen + 2 <= width ? 1 : 0;
  return decimals == expected;
}

bool parseNcclTestsOutput(const std::string& text, NcclTestsOutput& o, std::string& problem) {
  const std::vector<std::string> lines = splitLines(text);
  size_t i = 0;
  auto fail = [&](const std::string& what) {
    problem =
        what + (i < lines.size() ? " at line " + std::to_string(i + 1) + ": '" + lines[i] + "'" : " at end of output");
    return false;
  };
  auto at = [&](size_t k) -> const std::string& {
    static const std::string empty;
    return k < lines.size() ? lines[k] : empty;
  };
  // Lines printed before the header (JSON notice, option notices).
  while (i < lines.size() && !startsWith(lines[i], "# nccl-tests version ")) o.notes.push_back(lines[i++]);

  char version[256] = {};
  if (std::sscanf(at(i).c_str(), "# nccl-tests version %255s nccl-headers=%d nccl-library=%d", version, &o.ncclHeaders,
                  &o.ncclLibrary) != 3) {
    return fail("expected the version line");
  }
  o.version = version;
  ++i;
  if (!startsWith(at(i), "# Collective test starting: ")) return fail("expected '# Collective test starting:'");
  o.collective = at(i).substr(std::strlen("# Collective test starting: "));
  ++i;
  if (!parseConfigLine(at(i), o)) return fail("malformed '# nThread' line");
  ++i;
  while (startsWith(at(i), "# Blocking Enabled") || startsWith(at(i), "# Per-Iteration Report") ||
         startsWith(at(i), "# Parallel Init Enabled")) {
    o.notes.push_back(lines[i++]);
  }
  if (at(i) != "#") return fail("expected '#'");
  ++i;
  if (at(i) != "# Using devices") return fail("expected '# Using devices'");
  ++i;
  while (startsWith(at(i), "#  Rank ")) {
    NcclTestsDevice d;
    if (!parseDevice(at(i), d)) return fail("malformed device line");
    o.devices.push_back(d);
    ++i;
  }
  if (o.devices.empty()) return fail("expected device lines");
  if (at(i) != "#") return fail("expected '#' before the table header");
  ++i;
  if (i + 3 > lines.size()) return fail("expected the table header");
  o.headerLines.assign(lines.begin() + static_cast<long>(i), lines.begin() + static_cast<long>(i) + 3);
  if (!checkTableHeader(o.headerLines, problem)) return false;
  const bool perIteration = o.headerLines[1].find("i_min") != std::string::npos;
  i += 3;

  while (i < lines.size() && !startsWith(lines[i], "# Out of bounds values")) {
    const std::string& line = lines[i];
    if (!line.empty() && line[0] == ' ' && line.find_first_not_of(' ') != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(line[line.find_first_not_of(' ')]))) {
      NcclTestsRow row;
      if (!parseRow(line, perIteration, row)) return fail("malformed table row");
      o.rows.push_back(row);
    } else {
      o.otherLines.push_back(line);
    }
    ++i;
  }
  long long oob = 0;
  char status[32] = {};
  if (std::sscanf(at(i).c_str(), "# Out of bounds values : %lld %31s", &oob, status) != 2 ||
      at(i) != format("# %-20s : %lld %s", "Out of bounds values", oob, status)) {
    return fail("malformed 'Out of bounds values' line");
  }
  o.outOfBounds = oob;
  o.outOfBoundsStatus = status;
  ++i;
  const std::string avgPrefix = format("# %-20s : ", "Avg bus bandwidth");
  if (!startsWith(at(i), avgPrefix)) return fail("expected 'Avg bus bandwidth'");
  {
    const std::string rest = at(i).substr(avgPrefix.size());
    const size_t space = rest.find(' ');
    if (space == std::string::npos) return fail("'Avg bus bandwidth' lacks the space after the value");
    o.avgBusBwText = rest.substr(0, space);
    o.avgBusBwStatus = rest.substr(space + 1);
    o.avgBusBw = std::strtod(o.avgBusBwText.c_str(), nullptr);
    if (o.avgBusBwStatus != "" && o.avgBusBwStatus != "OK" && o.avgBusBwStatus != "FAILED") {
      return fail("unexpected 'Avg bus bandwidth' status");
    }
  }
  ++i;
  if (at(i) != "#") return fail("expected '#'");
  ++i;
  if (!startsWith(at(i), "# Collective test concluded: ")) return fail("expected '# Collective test concluded:'");
  o.concluded = at(i).substr(std::strlen("# Collective test concluded: "));
  ++i;
  if (startsWith(at(i), "# ") && at(i).find("memory usage") != std::string::npos) o.memoryLine = lines[i++];
  if (at(i) != "#") return fail("expected the final '#'");
  ++i;
  if (i >= lines.size()) return fail("expected an empty line or '# error:'");
  if (startsWith(at(i), "# error: ")) {
    o.error = at(i).substr(9);
  } else if (!at(i).empty()) {
    return fail("expected an empty line or '# error:'");
  }
  ++i;
  for (; i < lines.size(); ++i) {
    if (!startsWith(lines[i], " .. ")) return fail("unexpected text after the report");
    o.failures.push_back(lines[i]);
  }
  return true;
}

}  // namespace hcltest
