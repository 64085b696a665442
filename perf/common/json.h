// A streaming writer of compact JSON, in the shape nccl-tests' -J file has:
// no whitespace, doubles printed with "%lf", NaN and infinities as strings,
// booleans as the strings "true"/"false".
#pragma once

#include <cstdio>
#include <string_view>
#include <vector>

namespace hcl::perf {

class JsonWriter {
 public:
  explicit JsonWriter(std::FILE* file) : file_(file) {}

  void beginObject();
  void endObject();
  void beginList();
  void endList();
  void key(std::string_view name);
  void string(std::string_view text);
  void null();
  void integer(long long v);
  void unsignedInteger(unsigned long long v);
  void number(double v);
  void boolString(bool v) { string(v ? "true" : "false"); }
  // Closes every open list and object (a dangling key gets null).
  void closeAll();
  size_t depth() const { return stack_.size(); }

 private:
  struct Level {
    bool object;
    bool hasItems;
  };
  void beforeValue();
  void writeEscaped(std::string_view text);

  std::FILE* file_;
  std::vector<Level> stack_;
  bool afterKey_ = false;
};

}  // namespace hcl::perf
