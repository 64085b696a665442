// HCL's libnccl.so.2 exports exactly NVIDIA's 2.28.9 names (the list kept in
// plugins/nccl), with NVIDIA's bindings, under the SONAME libnccl.so.2, and
// nothing else.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>

namespace {

struct PipeCloser {
  void operator()(FILE* f) const { pclose(f); }
};

std::string runCommand(const std::string& command) {
  std::unique_ptr<FILE, PipeCloser> pipe(popen(command.c_str(), "r"));
  if (!pipe) return {};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe.get())) > 0) out.append(buf, n);
  return out;
}

struct DynamicSymbols {
  std::map<std::string, char> defined;  // name -> nm type letter (T, W, ...)
  size_t undefined = 0;
  bool read = false;
};

// Every entry of the dynamic symbol table, from `nm -D`.
DynamicSymbols dynamicSymbols(const std::string& library) {
  DynamicSymbols out;
  std::istringstream lines(runCommand(std::string(HCL_TEST_NM) + " -D '" + library + "' 2>/dev/null"));
  std::string line;
  while (std::getline(lines, line)) {
    out.read = true;
    std::istringstream fields(line);
    std::string a, b, c;
    fields >> a >> b >> c;
    if (c.empty()) {
      ++out.undefined;  // "U name" or "w name": an import
    } else {
      out.defined[c] = b[0];
    }
  }
  return out;
}

std::set<std::string> committedList() {
  std::ifstream in(HCL_TEST_SYMBOL_LIST);
  std::set<std::string> names;
  std::string name;
  while (in >> name) names.insert(name);
  return names;
}

std::set<std::string> keys(const std::map<std::string, char>& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

std::string describeDifference(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string out;
  for (const auto& s : a)
    if (!b.count(s)) out += " +" + s;
  for (const auto& s : b)
    if (!a.count(s)) out += " -" + s;
  return out;
}

TEST(NcclSymbols, CommittedListHasEveryProfilingTwin) {
  const auto names = committedList();
  ASSERT_EQ(names.size(), 105u);
  for (const auto& n : names) {
    EXPECT_TRUE(n.rfind("nccl", 0) == 0 || n.rfind("pnccl", 0) == 0) << n;
    if (n.rfind("pnccl", 0) == 0) {
      EXPECT_TRUE(names.count(n.substr(1))) << n;
    }
  }
}

TEST(NcclSymbols, HclLibraryExportsExactlyTheList) {
  const DynamicSymbols syms = dynamicSymbols(HCL_TEST_DROPIN_LIBRARY);
  ASSERT_TRUE(syms.read) << "nm read nothing from " << HCL_TEST_DROPIN_LIBRARY;
  const auto exported = keys(syms.defined);
  EXPECT_EQ(exported, committedList()) << "exported vs list:" << describeDifference(exported, committedList());
  for (const auto& [name, type] : syms.defined) {
    // nccl* are weak aliases of the pnccl* definitions, as in NVIDIA's library.
    const bool twin = name.rfind("nccl", 0) == 0 && syms.defined.count("p" + name);
    EXPECT_EQ(type, twin ? 'W' : 'T') << name;
  }
  EXPECT_GT(syms.undefined, 0u);
}

TEST(NcclSymbols, NoHclSymbolLeaks) {
  const DynamicSymbols syms = dynamicSymbols(HCL_TEST_DROPIN_LIBRARY);
  for (const auto& [name, type] : syms.defined) {
    EXPECT_EQ(name.find("hcl"), std::string::npos) << name;
    EXPECT_EQ(name.find("_Z"), std::string::npos) << name;
  }
}

TEST(NcclSymbols, SonameIsLibnccl2) {
  if (std::string(HCL_TEST_READELF).empty()) GTEST_SKIP() << "readelf was not found at configure time";
  const std::string dynamic = runCommand(std::string(HCL_TEST_READELF) + " -d '" + HCL_TEST_DROPIN_LIBRARY + "'");
  EXPECT_NE(dynamic.find("Library soname: [libnccl.so.2]"), std::string::npos) << dynamic;
}

TEST(NcclSymbols, NvidiaLibraryExportsTheSameNamesAndBindings) {
  const std::string nvidia = HCL_TEST_NVIDIA_LIBRARY;
  if (nvidia.empty()) {
    GTEST_SKIP() << "NVIDIA's libnccl.so.2 was not found at configure time (looked in /usr/local/cuda)";
  }
  const DynamicSymbols theirs = dynamicSymbols(nvidia);
  ASSERT_TRUE(theirs.read) << "nm read nothing from " << nvidia;
  EXPECT_EQ(keys(theirs.defined), committedList())
      << "NVIDIA vs list:" << describeDifference(keys(theirs.defined), committedList());
  const DynamicSymbols ours = dynamicSymbols(HCL_TEST_DROPIN_LIBRARY);
  EXPECT_EQ(ours.defined, theirs.defined);
}

}  // namespace
