// The Jinja subset, construct by construct: tests/data/text/jinja_goldens.json holds each
// case's output from @huggingface/jinja and, where that departs from Python Jinja2 (which
// transformers uses), Python's output with the reason. Then every unsupported construct and
// every limit must fail with an error naming the template line and the construct.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "text/jinja/template.h"
#include "text_test_data.h"

namespace qlinear::text::jinja {
namespace {

using nlohmann::ordered_json;

Result<std::string> render(const std::string& source, const ordered_json& context = {}) {
  QL_ASSIGN_OR_RETURN(Template t, Template::parse(source, "template"));
  return t.render(context.is_null() ? ordered_json::object() : context);
}

TEST(Jinja, CasesMatchPythonJinja2) {
  std::ifstream in(testing::golden_dir() + "/jinja_goldens.json");
  const ordered_json g = ordered_json::parse(in);
  ASSERT_GE(g["cases"].size(), 60u);
  for (const auto& c : g["cases"]) {
    const std::string name = c["name"].get<std::string>();
    // Python's output where it differs from @huggingface/jinja, else @huggingface/jinja's.
    ASSERT_TRUE(c.contains("python") || c.contains("huggingface")) << name;
    const std::string want =
        c.contains("python") ? c["python"].get<std::string>() : c["huggingface"].get<std::string>();
    Result<std::string> got = render(c["template"].get<std::string>(), c["context"]);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().to_string();
    EXPECT_EQ(*got, want) << name << "\n" << c["template"].get<std::string>();
  }
}

struct ErrorCase {
  const char* source;
  const char* message;  // a part of the error
};

void expect_error(const ErrorCase& c) {
  Result<std::string> got = render(c.source);
  ASSERT_FALSE(got.ok()) << c.source << " rendered: " << *got;
  EXPECT_NE(got.status().message().find(c.message), std::string::npos)
      << c.source << "\n  error: " << got.status().message() << "\n  expected: " << c.message;
}

TEST(Jinja, UnsupportedConstructsNameTheLineAndConstruct) {
  const ErrorCase cases[] = {
      {"{% include 'x.j2' %}", "template line 1: {% include %} is not supported"},
      {"a\nb\n{% call m() %}x{% endcall %}", "template line 3: {% call %} is not supported"},
      {"{% extends 'base' %}", "line 1: {% extends %} is not supported"},
      {"{% with a = 1 %}{% endwith %}", "{% with %} is not supported"},
      {"\n{{ 'x'|wordwrap(3) }}", "template line 2: filter 'wordwrap' is not supported"},
      {"{{ 1 is prime }}", "line 1: test 'prime' is not supported"},
      {"{% for x in y recursive %}{% endfor %}", "recursive for loops are not supported"},
      {"{{ f(*args) }}", "argument unpacking (*args, **kwargs) is not supported"},
      {"{{ '{}'.format(1) }}", "str.format() is not supported"},
      {"{{ '%s' % 1 }}", "printf-style string formatting (str % value) is not supported"},
      {"{% set x | upper %}a{% endset %}", "filters on a {% set %} block are not supported"},
      {"{{ '\\N{DASH}' }}", "the \\N{name} string escape is not supported"},
      {"{{ {1: 2} }}", "dict keys other than strings are not supported"},
  };
  for (const ErrorCase& c : cases) expect_error(c);
}

TEST(Jinja, TemplateErrorsNameTheLine) {
  const ErrorCase cases[] = {
      {"{% if x %}no end", "the template ends before {% elif or else or endif %}"},
      {"{{ x", "line 1: {{ is never closed"},
      {"{# x", "comment {# is never closed"},
      {"ok\n{{ 1 + }}", "template line 2: unexpected '}}' in an expression"},
      {"{% frobnicate %}", "unknown statement {% frobnicate %}"},
      {"{{ 'a' + 1 }}", "unsupported operand types for +: 'str' and 'int'"},
      {"{{ missing.attr }}", "'missing' is undefined"},
      {"{% set d = {} %}{{ d.a.b }}", "'dict object' has no attribute 'a'"},
      {"{{ [1].append(2) }}", "'list object' has no attribute 'append'"},
      {"{% set x = 1 %}{% set x.y = 2 %}",
       "cannot assign attribute 'y' on 'x': it is not a namespace()"},
      {"line\n{{ raise_exception('Roles must alternate') }}",
       "template line 2: the template raised an error: Roles must alternate"},
      {"{{ 1 // 0 }}", "division by zero"},
      {"{{ 9223372036854775807 + 1 }}", "integer overflow"},
      {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}",
       "macro 'm' takes not more than 1 argument(s)"},
      {"{% break %}", "outside a loop"},
  };
  for (const ErrorCase& c : cases) expect_error(c);
}

TEST(Jinja, LimitsBoundUntrustedTemplates) {
  const std::string deep = std::string(300, '(') + "1" + std::string(300, ')');
  expect_error({("{{ " + deep + " }}").c_str(), "nests more than 200 levels deep"});
  std::string nested_ifs;
  for (int i = 0; i < 250; ++i) nested_ifs += "{% if true %}";
  expect_error({nested_ifs.c_str(), "nests more than 200 levels deep"});
  expect_error({"{{ range(100000000)|length }}", "range() of more than 1000000 numbers"});
  expect_error({"{% for i in range(1000000) %}{% for j in range(2) %}{% endfor %}{% endfor %}",
                "more than 1000000 loop iterations"});
  expect_error(
      {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "the output exceeds 64 MiB"});
  expect_error(
      {"{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro calls nest deeper than 64"});
  expect_error({"{{ 'x' * 100000000 }}", "exceeds the output limit"});
}

TEST(Jinja, ContextValuesKeepTheirJsonTypesAndOrder) {
  const ordered_json context = ordered_json::parse(
      R"({"tool": {"z": 1, "a": [1.5, 2.0, "s", null, true], "m": {"b": 2, "a": 1}}})");
  Result<std::string> got =
      render("{{ tool|tojson }}|{{ tool.a[1] }}|{{ tool.m|tojson }}", context);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(
      *got,
      R"({"z": 1, "a": [1.5, 2.0, "s", null, true], "m": {"b": 2, "a": 1}}|2.0|{"b": 2, "a": 1})");
}

}  // namespace
}  // namespace qlinear::text::jinja
