// docs/parameters.md must mention every parameter of the table.
#include <gtest/gtest.h>

#include <string>

#include "core/params.h"
#include "tests/unit/params/test_env.h"

namespace hcl {
namespace {

TEST(ParamDocs, EveryParameterIsDocumented) {
  const std::string doc = test::readFile(std::string(HCL_SOURCE_DIR) + "/docs/parameters.md");
  ASSERT_FALSE(doc.empty()) << "docs/parameters.md is missing or empty";
  for (const ParamSpec& spec : paramTable()) {
    EXPECT_NE(doc.find("`" + std::string(spec.name) + "`"), std::string::npos)
        << spec.name << " is not in docs/parameters.md";
    if (spec.ncclAlias != nullptr) {
      EXPECT_NE(doc.find("`" + std::string(spec.ncclAlias) + "`"), std::string::npos)
          << spec.ncclAlias << " is not in docs/parameters.md";
    }
  }
}

}  // namespace
}  // namespace hcl
