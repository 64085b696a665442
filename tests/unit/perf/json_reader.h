// A small strict JSON reader (RFC 8259) for checking the -J files.
#pragma once

#include <string>
#include <vector>

namespace hcltest {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;  // in file order

  // The member named `key`, or nullptr (also when this is not an object).
  const JsonValue* find(const std::string& key) const;
  bool isNumber() const { return kind == Kind::Number; }
  bool isString() const { return kind == Kind::String; }
};

// False with `error` (naming the byte offset) if `text` is not one JSON value.
bool parseJson(const std::string& text, JsonValue& out, std::string& error);

}  // namespace hcltest
