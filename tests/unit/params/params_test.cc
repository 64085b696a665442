#include "core/params.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/log.h"
#include "tests/unit/params/test_env.h"

namespace hcl {
namespace {

class ParamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    writeConf("");
    ::setenv("HCL_CONF_FILE", conf_.c_str(), 1);
  }
  void writeConf(const std::string& text) { test::writeFile(conf_, text); }
  // What the log says while fn() runs.
  std::string logOf(const std::function<void()>& fn) {
    const std::string logPath = dir_.file("params.log");
    ::setenv("HCL_DEBUG_FILE", logPath.c_str(), 1);
    log::reset();
    fn();
    ::unsetenv("HCL_DEBUG_FILE");
    log::reset();
    return test::readFile(logPath);
  }

  test::CleanEnv env_;
  test::ScratchDir dir_;
  std::string conf_ = dir_.file("hcl.conf");
};

TEST(ParamTable, RowsAreWellFormed) {
  std::set<std::string> names;
  for (const ParamSpec& spec : paramTable()) {
    SCOPED_TRACE(spec.name);
    EXPECT_TRUE(std::string_view(spec.name).starts_with("HCL_"));
    EXPECT_TRUE(names.insert(spec.name).second) << "duplicate row";
    if (spec.ncclAlias != nullptr) {
      EXPECT_TRUE(std::string_view(spec.ncclAlias).starts_with("NCCL_"));
    }
    ASSERT_NE(spec.help, nullptr);
    EXPECT_GT(std::string_view(spec.help).size(), 5u);
    ASSERT_NE(spec.defaultValue, nullptr);
    if (spec.type == ParamType::Int) {
      EXPECT_TRUE(parseParamInt(spec.defaultValue).has_value());
    }
    if (spec.type == ParamType::Bool) {
      EXPECT_TRUE(parseParamBool(spec.defaultValue).has_value());
    }
    EXPECT_EQ(findParam(spec.name), &spec);
  }
  EXPECT_GE(names.size(), 19u);
  EXPECT_EQ(findParam("HCL_NO_SUCH_KNOB"), nullptr);
}

TEST(ParamTable, ProgrammingErrorsThrow) {
  EXPECT_THROW(resolveParam("HCL_NO_SUCH_KNOB"), std::logic_error);
  EXPECT_THROW(paramInt("HCL_NO_SUCH_KNOB"), std::logic_error);
  EXPECT_THROW(paramInt("NCCL_DEBUG"), std::logic_error);  // aliases are not names
  EXPECT_THROW(paramInt("HCL_DEBUG"), std::logic_error);
  EXPECT_THROW(paramBool("HCL_TIMEOUT_MS"), std::logic_error);
  EXPECT_THROW(paramInt("HCL_SHM_DISABLE"), std::logic_error);
}

TEST_F(ParamsTest, DefaultsWhenNothingIsSet) {
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
  EXPECT_EQ(paramInt("HCL_SHM_CMA_THRESHOLD"), 16384);
  EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 524288);
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 8);
  EXPECT_FALSE(paramBool("HCL_SHM_DISABLE"));
  EXPECT_TRUE(paramBool("HCL_COMM_BLOCKING"));
  EXPECT_EQ(paramString("HCL_DEBUG_SUBSYS"), "INIT,BOOTSTRAP,ENV");
  const ParamValue v = resolveParam("HCL_DEBUG");
  EXPECT_EQ(v.text, "");
  EXPECT_EQ(v.source, ParamSource::Default);
  EXPECT_EQ(v.origin, "");
  EXPECT_EQ(paramSourceName(v), "default");
}

TEST_F(ParamsTest, LookupOrderEnvThenAliasThenConfigThenDefault) {
  writeConf("HCL_SOCKET_IFNAME=conf0\n");
  ::setenv("HCL_SOCKET_IFNAME", "hcl0", 1);
  ::setenv("NCCL_SOCKET_IFNAME", "nccl0", 1);

  ParamValue v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "hcl0");
  EXPECT_EQ(v.source, ParamSource::Env);
  EXPECT_EQ(paramSourceName(v), "env");

  ::unsetenv("HCL_SOCKET_IFNAME");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "nccl0");
  EXPECT_EQ(v.source, ParamSource::NcclEnv);
  EXPECT_EQ(v.origin, "NCCL_SOCKET_IFNAME");
  EXPECT_EQ(paramSourceName(v), "NCCL env (NCCL_SOCKET_IFNAME)");

  ::unsetenv("NCCL_SOCKET_IFNAME");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "conf0");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
  EXPECT_EQ(paramSourceName(v), "config file");

  writeConf("# nothing here any more\n");
  v = resolveParam("HCL_SOCKET_IFNAME");
  EXPECT_EQ(v.text, "");
  EXPECT_EQ(v.source, ParamSource::Default);
}

TEST_F(ParamsTest, IntEnvIsSeenOnEveryCall) {
  ::setenv("HCL_TIMEOUT_MS", "1500", 1);
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 1500);
  ::setenv("HCL_TIMEOUT_MS", "2500", 1);
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 2500);
  ::setenv("HCL_CHUNK_BYTES", "1M", 1);
  EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 1 << 20);
}

TEST_F(ParamsTest, EmptyEnvironmentValueCountsAsUnset) {
  writeConf("HCL_ALGO=ring\n");
  ::setenv("HCL_ALGO", "", 1);
  ::setenv("NCCL_ALGO", "", 1);
  const ParamValue v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "ring");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
}

TEST_F(ParamsTest, ConfigFileAcceptsNcclKeysButHclKeysWin) {
  writeConf("NCCL_ALGO=tree\n");
  ParamValue v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "tree");
  EXPECT_EQ(v.source, ParamSource::ConfigFile);
  EXPECT_EQ(v.origin, "NCCL_ALGO");
  EXPECT_EQ(paramSourceName(v), "config file (NCCL_ALGO)");

  writeConf("HCL_ALGO=ring\nNCCL_ALGO=tree\n");
  v = resolveParam("HCL_ALGO");
  EXPECT_EQ(v.text, "ring");
  EXPECT_EQ(v.origin, "HCL_ALGO");
}

TEST_F(ParamsTest, ConfigFileSyntax) {
  writeConf(
      "# a comment line\n"
      "   # an indented comment\n"
      "\n"
      "  HCL_TIMEOUT_MS =  7000   # trailing comment\n"
      "HCL_SOCKET_IFNAME=eth#0\n"
      "this line has no equals sign\n"
      "HCL_ALGO=\"ring\"\n"
      "HCL_SPIN_US=10\n"
      "HCL_SPIN_US=20\n"
      "HCL_SHM_SLOTS=4\r\n"
      "HCL_COMM_SECRET=\n"
      "HCL_NOT_IN_TABLE=1\n");
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 7000);
  EXPECT_EQ(paramString("HCL_SOCKET_IFNAME"), "eth#0");
  EXPECT_EQ(paramString("HCL_ALGO"), "ring");
  EXPECT_EQ(paramInt("HCL_SPIN_US"), 20);  // the last line wins
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 4);
  EXPECT_EQ(resolveParam("HCL_COMM_SECRET").source, ParamSource::Default);
}

TEST_F(ParamsTest, ConfigFileLinesThatSetNothingAreReported) {
  writeConf(
      "HCL_TIMEOUT_MS=7000\n"
      "HCL_TIMEOUT_M=5\n"
      "HCL_ALGO ring\n"
      "export HCL_SPIN_US=7\n"
      "hcl_chunk_bytes=8K\n"
      "NCCL_IB_HCA=mlx5_0\n"
      "NCCL_TIMEOUT_MS=5\n"
      "HCL_FABRIC=\"open\n");
  EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 7000);
  const auto problems = configFileProblems();
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  ASSERT_EQ(problems.size(), 5u) << all;
  EXPECT_NE(problems[0].find("line 2: 'HCL_TIMEOUT_M=5' names no HCL parameter (HCL_TIMEOUT_M is not one; did you "
                             "mean HCL_TIMEOUT_MS?)"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("line 3: 'HCL_ALGO ring' is not NAME=value"), std::string::npos) << problems[1];
  EXPECT_NE(problems[2].find("line 4: 'export HCL_SPIN_US=7' does not start with a parameter name"),
            std::string::npos)
      << problems[2];
  EXPECT_NE(problems[3].find("line 5: 'hcl_chunk_bytes=8K' names no HCL parameter"), std::string::npos)
      << problems[3];
  EXPECT_NE(problems[4].find("line 8: 'HCL_FABRIC=\"open' has an unterminated quote"), std::string::npos)
      << problems[4];
  EXPECT_EQ(resolveParam("HCL_FABRIC").source, ParamSource::Default);
  // NCCL's own names that HCL does not implement belong to NVIDIA's library.
  for (const auto& p : problems) EXPECT_EQ(p.find("NCCL_"), std::string::npos) << p;
}

TEST_F(ParamsTest, EnvironmentNamesThatAreNoParameterAreWarnedAbout) {
  ::setenv("HCL_SHM_DISSABLE", "1", 1);
  ::setenv("HCL_WHOLLY_UNKNOWN", "1", 1);
  ::setenv("HCL_TEST_OWN_KNOB", "1", 1);  // the tests' own
  ::setenv("HCL_ALGO", "ring", 1);
  std::string all;
  for (const auto& p : environmentProblems()) all += p + "\n";
  const std::string logged = logOf([] { log::warn(log::Env, "after the notes"); });
  for (const char* name : {"HCL_SHM_DISSABLE", "HCL_WHOLLY_UNKNOWN", "HCL_TEST_OWN_KNOB"}) ::unsetenv(name);
  EXPECT_NE(all.find("environment variable HCL_SHM_DISSABLE is no HCL parameter and changes nothing; did you mean "
                     "HCL_SHM_DISABLE?\n"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("HCL_WHOLLY_UNKNOWN is no HCL parameter and changes nothing\n"), std::string::npos) << all;
  EXPECT_EQ(all.find("HCL_TEST_OWN_KNOB"), std::string::npos) << all;
  EXPECT_EQ(all.find("HCL_ALGO "), std::string::npos) << all;
  EXPECT_NE(logged.find("HCL WARN ENV environment variable HCL_SHM_DISSABLE is no HCL parameter"), std::string::npos)
      << logged;
}

TEST(ParamNames, TheClosestWithinTwoEdits) {
  EXPECT_EQ(closestParamName("HCL_TIMEOUT_M"), "HCL_TIMEOUT_MS");
  EXPECT_EQ(closestParamName("hcl_algo"), "HCL_ALGO") << "case does not count";
  EXPECT_EQ(closestParamName("HCL_SHM_DISABLED"), "HCL_SHM_DISABLE");
  EXPECT_EQ(closestParamName("HCL_NOTHING_LIKE_ANY"), "");
}

TEST_F(ParamsTest, QuotedConfigValuesKeepTheirHashes) {
  writeConf("HCL_FABRIC=\"my fabric #1\"  # the label\nHCL_HOSTID='a #b'\nHCL_ALGO=\"ring\" tree\n");
  EXPECT_EQ(paramString("HCL_FABRIC"), "my fabric #1");
  EXPECT_EQ(paramString("HCL_HOSTID"), "a #b");
  EXPECT_EQ(resolveParam("HCL_ALGO").source, ParamSource::Default);
  ASSERT_EQ(configFileProblems().size(), 1u);
  EXPECT_NE(configFileProblems()[0].find("text after its quoted value"), std::string::npos);
}

TEST_F(ParamsTest, ANamedConfigFileThatCannotBeReadIsReported) {
  EXPECT_TRUE(configFileProblems().empty()) << "the fixture's file exists";
  ::setenv("HCL_CONF_FILE", dir_.file("typo.conf").c_str(), 1);
  ASSERT_EQ(configFileProblems().size(), 1u);
  EXPECT_NE(configFileProblems()[0].find("typo.conf (from HCL_CONF_FILE): No such file"), std::string::npos)
      << configFileProblems()[0];
  ::setenv("HCL_CONF_FILE", dir_.file("").c_str(), 1);  // a directory
  ASSERT_EQ(configFileProblems().size(), 1u);
  EXPECT_NE(configFileProblems()[0].find("is not a regular file"), std::string::npos) << configFileProblems()[0];
  // $HOME/.hcl.conf is optional: its absence is no problem.
  ::unsetenv("HCL_CONF_FILE");
  ::setenv("HOME", dir_.file("nohome").c_str(), 1);
  EXPECT_TRUE(configFileProblems().empty());
}

TEST_F(ParamsTest, ConfigFileChangesAreSeen) {
  writeConf("HCL_SHM_SLOTS=3\n");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 3);
  writeConf("HCL_SHM_SLOTS=16\n");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 16);
}

TEST_F(ParamsTest, ConfigFilePathFromAliasAndHome) {
  EXPECT_EQ(paramConfigFilePath(), conf_);
  const std::string other = dir_.file("other.conf");
  test::writeFile(other, "HCL_SHM_SLOTS=5\n");
  ::unsetenv("HCL_CONF_FILE");
  ::setenv("NCCL_CONF_FILE", other.c_str(), 1);
  EXPECT_EQ(paramConfigFilePath(), other);
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 5);
  EXPECT_EQ(resolveParam("HCL_CONF_FILE").source, ParamSource::NcclEnv);

  ::unsetenv("NCCL_CONF_FILE");
  const std::string home = dir_.file("home");
  std::filesystem::create_directories(home);
  test::writeFile(home + "/.hcl.conf", "HCL_SHM_SLOTS=6\n");
  ::setenv("HOME", home.c_str(), 1);
  EXPECT_EQ(paramConfigFilePath(), home + "/.hcl.conf");
  EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 6);
}

TEST(ParamParse, IntegersWithBinarySuffixes) {
  EXPECT_EQ(parseParamInt("0"), 0);
  EXPECT_EQ(parseParamInt("42"), 42);
  EXPECT_EQ(parseParamInt(" 42 "), 42);
  EXPECT_EQ(parseParamInt("-5"), -5);
  EXPECT_EQ(parseParamInt("+7"), 7);
  EXPECT_EQ(parseParamInt("64K"), 65536);
  EXPECT_EQ(parseParamInt("64k"), 65536);
  EXPECT_EQ(parseParamInt("2M"), 2 * 1024 * 1024);
  EXPECT_EQ(parseParamInt("2m"), 2 * 1024 * 1024);
  EXPECT_EQ(parseParamInt("3G"), int64_t{3} << 30);
  EXPECT_EQ(parseParamInt("-1K"), -1024);
  EXPECT_EQ(parseParamInt("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " ", "abc", "12KB", "1.5K", "K", "0x10", "12 K", "+-5", "--1",
                          "99999999999999999999", "9223372036854775807K", "8G8"}) {
    EXPECT_FALSE(parseParamInt(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ParamParse, Booleans) {
  for (const char* t : {"1", "true", "TRUE", "True", "yes", "YES", "on", "On", " 1 "})
    EXPECT_EQ(parseParamBool(t), std::optional<bool>(true)) << t;
  for (const char* f : {"0", "false", "FALSE", "no", "No", "off", "OFF"})
    EXPECT_EQ(parseParamBool(f), std::optional<bool>(false)) << f;
  for (const char* bad : {"", "2", "maybe", "y", "enable", "truee"})
    EXPECT_FALSE(parseParamBool(bad).has_value()) << bad;
}

TEST_F(ParamsTest, BoolParamsFromEnv) {
  ::setenv("HCL_SHM_DISABLE", "yes", 1);
  EXPECT_TRUE(paramBool("HCL_SHM_DISABLE"));
  ::setenv("HCL_SHM_DISABLE", "Off", 1);
  EXPECT_FALSE(paramBool("HCL_SHM_DISABLE"));
  ::unsetenv("HCL_SHM_DISABLE");
  ::setenv("NCCL_SHM_DISABLE", "1", 1);
  EXPECT_TRUE(paramBool("HCL_SHM_DISABLE"));
  ::setenv("NCCL_COMM_BLOCKING", "0", 1);
  EXPECT_FALSE(paramBool("HCL_COMM_BLOCKING"));
}

TEST_F(ParamsTest, InvalidValuesFallBackToDefaultAndWarnOnce) {
  const std::string text = logOf([&] {
    ::setenv("HCL_TIMEOUT_MS", "soon-ish", 1);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    ::setenv("HCL_COMM_BLOCKING", "perhaps", 1);
    EXPECT_TRUE(paramBool("HCL_COMM_BLOCKING"));
    writeConf("HCL_SHM_SLOTS=lots\n");
    EXPECT_EQ(paramInt("HCL_SHM_SLOTS"), 8);
  });
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("'soon-ish' for HCL_TIMEOUT_MS"), 1u) << text;
  EXPECT_EQ(count("'perhaps' for HCL_COMM_BLOCKING"), 1u) << text;
  EXPECT_EQ(count("'lots' for HCL_SHM_SLOTS (from config file)"), 1u) << text;
  EXPECT_NE(text.find("HCL WARN ENV Invalid value"), std::string::npos) << text;
}

TEST_F(ParamsTest, OutOfRangeIntegersFallBackToDefaultAndSayWhatIsAccepted) {
  const std::string text = logOf([] {
    ::setenv("HCL_TCP_STREAMS", "65", 1);
    EXPECT_EQ(paramInt("HCL_TCP_STREAMS"), 1);
    ::setenv("HCL_TCP_STREAMS", "64", 1);
    EXPECT_EQ(paramInt("HCL_TCP_STREAMS"), 64);
    ::setenv("HCL_TIMEOUT_MS", "-1", 1);
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 60000);
    ::setenv("HCL_TIMEOUT_MS", "0", 1);  // documented: never time out
    EXPECT_EQ(paramInt("HCL_TIMEOUT_MS"), 0);
    ::setenv("HCL_CHUNK_BYTES", "0", 1);
    EXPECT_EQ(paramInt("HCL_CHUNK_BYTES"), 524288);
  });
  EXPECT_NE(text.find("'65' for HCL_TCP_STREAMS (from env; accepted: 1 to 64), using default 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("'-1' for HCL_TIMEOUT_MS"), std::string::npos) << text;
  EXPECT_NE(text.find("'0' for HCL_CHUNK_BYTES"), std::string::npos) << text;
  EXPECT_EQ(text.find("'64' for"), std::string::npos) << text;
  EXPECT_EQ(text.find("'0' for HCL_TIMEOUT_MS"), std::string::npos) << text;
}

TEST_F(ParamsTest, OnlyAnAcceptedValueCountsAsSetByTheUser) {
  EXPECT_FALSE(paramSetByUser("HCL_SPIN_US"));
  for (const char* ignored : {"abc", "-1", "20000000"}) {
    ::setenv("HCL_SPIN_US", ignored, 1);
    EXPECT_FALSE(paramSetByUser("HCL_SPIN_US")) << ignored;
    EXPECT_FALSE(paramTextAccepted(*findParam("HCL_SPIN_US"), ignored)) << ignored;
  }
  ::setenv("HCL_SPIN_US", "7", 1);
  EXPECT_TRUE(paramSetByUser("HCL_SPIN_US"));
  ::unsetenv("HCL_SPIN_US");
  writeConf("HCL_SHM_DISABLE=maybe\nHCL_ALGO=ring\n");
  EXPECT_FALSE(paramSetByUser("HCL_SHM_DISABLE"));
  EXPECT_TRUE(paramSetByUser("HCL_ALGO"));
}

TEST(ParamTable, DefaultsAreWithinTheirRanges) {
  for (const ParamSpec& spec : paramTable()) {
    if (spec.type != ParamType::Int) continue;
    SCOPED_TRACE(spec.name);
    const auto v = parseParamInt(spec.defaultValue);
    ASSERT_TRUE(v.has_value());
    EXPECT_GE(*v, spec.min);
    EXPECT_LE(*v, spec.max);
  }
}

TEST_F(ParamsTest, ConcurrentLookupsAgree) {
  writeConf("HCL_SHM_SLOTS=12\n");
  ::setenv("HCL_SPIN_US", "7", 1);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 200; ++i) {
        if (paramInt("HCL_SHM_SLOTS") != 12) ++failures[t];
        if (paramInt("HCL_SPIN_US") != 7) ++failures[t];
        if (paramInt("HCL_TIMEOUT_MS") != 60000) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace hcl
