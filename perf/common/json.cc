#include "perf/common/json.h"

#include <cmath>

namespace hcl::perf {

void JsonWriter::beforeValue() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!stack_.empty()) {
    if (stack_.back().hasItems) std::fputc(',', file_);
    stack_.back().hasItems = true;
  }
}

void JsonWriter::writeEscaped(std::string_view text) {
  std::fputc('"', file_);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': std::fputs("\\\"", file_); break;
      case '\\': std::fputs("\\\\", file_); break;
      case '\n': std::fputs("\\n", file_); break;
      case '\t': std::fputs("\\t", file_); break;
      case '\r': std::fputs("\\r", file_); break;
      default:
        // Control characters and bytes outside ASCII (the environment may hold
        // anything) become \u escapes, so the file always parses.
        if (c < 0x20 || c >= 0x7f) {
          std::fprintf(file_, "\\u%04x", c);
        } else {
          std::fputc(c, file_);
        }
    }
  }
  std::fputc('"', file_);
}

void JsonWriter::beginObject() {
  beforeValue();
  std::fputc('{', file_);
  stack_.push_back({true, false});
}

void JsonWriter::endObject() {
  if (afterKey_) null();
  std::fputc('}', file_);
  stack_.pop_back();
}

void JsonWriter::beginList() {
  beforeValue();
  std::fputc('[', file_);
  stack_.push_back({false, false});
}

void JsonWriter::endList() {
  std::fputc(']', file_);
  stack_.pop_back();
}

void JsonWriter::key(std::string_view name) {
  if (stack_.back().hasItems) std::fputc(',', file_);
  stack_.back().hasItems = true;
  writeEscaped(name);
  std::fputc(':', file_);
  afterKey_ = true;
}

void JsonWriter::string(std::string_view text) {
  beforeValue();
  writeEscaped(text);
}

void JsonWriter::null() {
  beforeValue();
  std::fputs("null", file_);
}

void JsonWriter::integer(long long v) {
  beforeValue();
  std::fprintf(file_, "%lld", v);
}

void JsonWriter::unsignedInteger(unsigned long long v) {
  beforeValue();
  std::fprintf(file_, "%llu", v);
}

void JsonWriter::number(double v) {
  beforeValue();
  if (std::isnan(v)) {
    std::fputs("\"nan\"", file_);
  } else if (std::isinf(v)) {
    std::fputs(v > 0 ? "\"inf\"" : "\"-inf\"", file_);
  } else {
    std::fprintf(file_, "%lf", v);
  }
}

void JsonWriter::closeAll() {
  while (!stack_.empty()) {
    if (stack_.back().object) {
      endObject();
    } else {
      endList();
    }
  }
}

}  // namespace hcl::perf
