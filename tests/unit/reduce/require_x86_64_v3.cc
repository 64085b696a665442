// Skips every test of the binary on a CPU that cannot run x86-64-v3 code
// (AVX2, FMA, F16C, BMI2): the kernels it tests are built for that level only.
#include <gtest/gtest.h>

namespace {

class RequireX86_64V3 : public ::testing::Environment {
 public:
  void SetUp() override {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("x86-64-v3"))
      GTEST_SKIP() << "this CPU cannot run x86-64-v3 code (AVX2, FMA, F16C, BMI2), which the kernels under test "
                      "were built for";
  }
};

// GoogleTest owns registered environments.
[[maybe_unused]] const ::testing::Environment* const kRequireV3 =
    ::testing::AddGlobalTestEnvironment(new RequireX86_64V3);

}  // namespace
