// Small templates, one construct each, for the Jinja subset. make_jinja_goldens.mjs renders
// them with @huggingface/jinja. Where @huggingface/jinja departs from Python Jinja2 (what
// transformers renders with), `python` holds Python's output and `why` says how they differ;
// qlinear follows Python.
const msgs = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Hi" },
  { role: "assistant", content: "Hello!" },
  { role: "user", content: "Bye" },
];

export const jinjaCases = [
  // statements
  { name: "for_loop_vars", template: "{% for m in messages %}{{ loop.index0 }}/{{ loop.index }}/{{ loop.length }}:{{ m.role }}{% if loop.first %}F{% endif %}{% if loop.last %}L{% endif %};{% endfor %}", context: { messages: msgs } },
  { name: "for_revindex", template: "{% for x in [1,2,3] %}{{ loop.revindex }}{{ loop.revindex0 }},{% endfor %}", context: {} },
  { name: "for_else", template: "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}", context: {} },
  { name: "for_filter", template: "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.content }} {% endfor %}", context: { messages: msgs } },
  { name: "for_tuple_unpack", template: "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", context: { d: { b: 1, a: 2 } } },
  { name: "for_dict_keys", template: "{% for k in d %}{{ k }}{% endfor %}", context: { d: { x: 1, y: 2 } } },
  { name: "for_string_chars", template: "{% for c in 'héllo' %}[{{ c }}]{% endfor %}", context: {}, python: "[h][é][l][l][o]", why: "@huggingface/jinja cannot loop over a string" },
  { name: "for_previtem_nextitem", template: "{% for x in [1,2,3] %}{{ loop.previtem is defined }}{{ loop.nextitem | default('-') }} {% endfor %}", context: {}, python: "False2 True3 True- ", why: "booleans print as True/False in Python, true/false in @huggingface/jinja" },
  { name: "for_loop_cycle", template: "{% for x in [1,2,3] %}{{ loop.cycle('a', 'b') }}{% endfor %}", context: {}, python: "aba", why: "@huggingface/jinja has no loop.cycle" },
  { name: "for_break_continue", template: "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", context: {} },
  { name: "nested_loops", template: "{% for a in [1,2] %}{% for b in ['x','y'] %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}", context: {} },
  { name: "if_elif_else", template: "{% for n in [1,2,3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} {% endfor %}", context: {} },
  { name: "set_scoping", template: "{% set x = 1 %}{% for i in [1,2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}", context: {}, python: "231", why: "Jinja2 starts each loop iteration from the outer x; @huggingface/jinja keeps the previous iteration's" },
  { name: "set_namespace", template: "{% set ns = namespace(total=0, seen=false) %}{% for i in [1,2,3] %}{% set ns.total = ns.total + i %}{% if i == 2 %}{% set ns.seen = true %}{% endif %}{% endfor %}{{ ns.total }} {{ ns.seen }}", context: {}, python: "6 True", why: "booleans print as True/False in Python" },
  { name: "set_tuple", template: "{% set a, b = 1, 'two' %}{{ b }}{{ a }}", context: {} },
  { name: "set_block", template: "{% set greeting %}Hello {{ name }}!{% endset %}[{{ greeting }}]", context: { name: "Ann" } },
  { name: "macro", template: "{% macro tag(name, value='x') %}<{{ name }}>{{ value }}</{{ name }}>{% endmacro %}{{ tag('a') }}{{ tag('b', value='y') }}{{ tag('c', 'z') }}", context: {} },
  { name: "macro_recursive", template: "{% macro count(n) %}{{ n }}{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}{{ count(3) }}", context: {} },
  { name: "comment", template: "a{# ignored {{ x }} #}b", context: {} },
  { name: "raw_block", template: "{% raw %}{{ not evaluated }}{% endraw %}", context: {}, python: "{{ not evaluated }}", why: "@huggingface/jinja has no raw block" },
  { name: "generation_block", template: "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% endif %}{% endfor %}", context: { messages: msgs } },

  // whitespace control (trim_blocks and lstrip_blocks are on, as in transformers)
  { name: "trim_blocks", template: "{% if true %}\nyes\n{% endif %}\ndone", context: {} },
  { name: "lstrip_blocks", template: "line\n    {% if true %}\n    indented\n    {% endif %}\nend", context: {} },
  { name: "dash_control", template: "a  \n  {%- if true -%}  \n  b  \n  {%- endif -%}  \n  c", context: {} },
  { name: "dash_print", template: "x   {{- 'y' -}}   z", context: {} },
  { name: "print_keeps_newline", template: "{{ 'a' }}\n{{ 'b' }}\n", context: {} },
  { name: "trailing_newline_dropped", template: "text\n", context: {} },
  { name: "plus_disables_lstrip", template: "a\n  {%+ if true %}b{% endif %}", context: {}, python: "a\n  b", why: "@huggingface/jinja has no + whitespace control" },

  // expressions
  { name: "string_concat", template: "{{ 'a' + 'b' ~ 1 ~ none }}", context: {}, python: "ab1None", why: "Python prints None as None; @huggingface/jinja refuses ~ with none" },
  { name: "string_slicing", template: "{{ s[1:4] }}|{{ s[::-1] }}|{{ s[-2:] }}|{{ s[:2] }}|{{ s[::2] }}", context: { s: "abcdef" } },
  { name: "list_slicing", template: "{{ xs[1:]|join(',') }}|{{ xs[::-1]|join(',') }}|{{ xs[-1] }}", context: { xs: [1, 2, 3, 4] } },
  { name: "indexing", template: "{{ messages[0]['role'] }} {{ messages[-1].content }} {{ messages|length }}", context: { messages: msgs } },
  { name: "arithmetic", template: "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}", context: {}, python: "3 -4 1 2 1024 3.5 7 9", why: "Python's % takes the divisor's sign (-7 % 3 == 2); JavaScript's the dividend's" },
  { name: "float_printing", template: "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 2.5 }} {{ 1 / 3 }}", context: {}, python: "1.0 0.30000000000000004 1e+20 2.5 0.3333333333333333", why: "Python's repr writes 1e+20" },
  { name: "comparisons", template: "{{ 1 < 2 }} {{ 'a' == 'a' }} {{ 3 >= 4 }} {{ 1 != 1.0 }}", context: {}, python: "True True False False", why: "booleans print as True/False in Python" },
  { name: "in_operator", template: "{% if 'b' in 'abc' %}1{% endif %}{% if 2 in [1,2] %}2{% endif %}{% if 'k' in d %}3{% endif %}{% if 'z' not in d %}4{% endif %}", context: { d: { k: 1 } } },
  { name: "logic", template: "{% if a and not b or c %}yes{% else %}no{% endif %} {{ (0 or 'x') }} {{ (1 and 'y') }}", context: { a: true, b: false, c: false } },
  { name: "ternary", template: "{{ 'yes' if flag else 'no' }} {{ 'a' if not flag else 'b' }}", context: { flag: true } },
  { name: "is_tests", template: "{{ x is defined }}{{ y is undefined }}{{ n is none }}{{ s is string }}{{ d is mapping }}{{ l is iterable }}{{ 3 is odd }}{{ 4 is even }}{{ 6 is divisibleby(3) }}{{ s is not none }}", context: { x: 1, n: null, s: "t", d: {}, l: [] }, python: "TrueTrueTrueTrueTrueTrueTrueTrueTrueTrue", why: "booleans print as True/False in Python" },
  { name: "not_is_defined_precedence", template: "{% if not add_generation_prompt is defined %}undefined{% else %}defined{% endif %}", context: {} },
  { name: "undefined_prints_empty", template: "[{{ missing }}][{{ d.missing }}]", context: { d: {} } },
  { name: "dict_literal_and_get", template: "{% set d = {'a': 1, 'b': [1, 2]} %}{{ d.a }}{{ d['b'][1] }}{{ d.get('c', 'z') }}", context: {} },

  // filters
  { name: "filter_trim", template: "[{{ '  a b \\n'|trim }}]", context: {} },
  { name: "filter_tojson", template: "{{ d|tojson }}", context: { d: { name: "f", args: [1, "two", null, true], nested: { "k\"ey": "é\n" } } } },
  { name: "filter_tojson_indent", template: "{{ d|tojson(indent=2) }}", context: { d: { a: [1, 2], b: {} } } },
  { name: "filter_tojson_string", template: "{{ 'a\"b'|tojson }}", context: {} },
  { name: "filter_length", template: "{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a':1}|length }}", context: {} },
  { name: "filter_upper_lower", template: "{{ 'MiXed'|upper }} {{ 'MiXed'|lower }} {{ 'hello world'|title }} {{ 'hello'|capitalize }}", context: {} },
  { name: "filter_join", template: "{{ ['a','b','c']|join(', ') }} {{ [1,2]|join }}", context: {} },
  { name: "filter_default", template: "{{ missing|default('dflt') }} {{ ''|default('e', true) }} {{ 'x'|default('y') }}", context: {} },
  { name: "filter_items", template: "{% for k, v in d|items %}{{ k }}:{{ v }} {% endfor %}", context: { d: { one: 1, two: 2 } } },
  { name: "filter_selectattr", template: "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}", context: { messages: msgs } },
  { name: "filter_selectattr_truthy", template: "{{ items|selectattr('on')|map(attribute='n')|join }}{{ items|rejectattr('on')|map(attribute='n')|join }}", context: { items: [{ n: "a", on: true }, { n: "b", on: false }, { n: "c", on: 1 }] } },
  { name: "filter_first_last", template: "{{ [3,4,5]|first }}{{ [3,4,5]|last }}", context: {} },
  { name: "filter_reverse_sort", template: "{{ [3,1,2]|sort|join }} {{ [3,1,2]|reverse|join }} {{ ['b','A','c']|sort|join }}", context: {} },
  { name: "filter_replace", template: "{{ 'a-b-c'|replace('-', '+') }}", context: {} },
  { name: "filter_int_float", template: "{{ '42'|int + 1 }} {{ '3.5'|float }} {{ 'x'|int }}", context: {} },
  { name: "filter_string", template: "{{ 12|string ~ 'x' }}", context: {} },
  { name: "filter_indent", template: "{{ 'a\\nb\\n\\nc'|indent(2) }}", context: {} },
  { name: "filter_unique", template: "{{ [1,2,1,3,2]|unique|join }}", context: {} },
  { name: "filter_list", template: "{{ 'abc'|list|join('.') }}", context: {}, python: "a.b.c", why: "@huggingface/jinja has no list filter for strings" },

  // methods
  { name: "method_startswith", template: "{{ s.startswith('<tool') }}{{ s.endswith('>') }}", context: { s: "<tool_response>" }, python: "TrueTrue", why: "booleans print as True/False in Python" },
  { name: "method_split", template: "{{ s.split('</think>')[-1] }}|{{ s.split('</think>')[0] }}|{{ 'a  b c'.split()|join(',') }}", context: { s: "<think>x</think>answer" } },
  { name: "method_strip", template: "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}]", context: {} },
  { name: "method_strip_chars", template: "[{{ '\\n\\nx\\n '.strip('\\n') }}][{{ 'xxhixx'.lstrip('x') }}]", context: {}, python: "[x\n ][hixx]", why: "@huggingface/jinja ignores strip's argument and strips whitespace" },
  { name: "method_upper_replace", template: "{{ 'abc'.upper() }} {{ 'aXbX'.replace('X', '') }}", context: {} },
  { name: "method_dict", template: "{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}{{ d.keys()|join }}{{ d.values()|join }}", context: { d: { a: 1, b: 2 } } },

  // globals
  { name: "range", template: "{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 10, 4) %}{{ i }}{% endfor %}", context: {} },
  { name: "variables", template: "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}>{% endif %}", context: { messages: msgs, bos_token: "<s>", eos_token: "</s>", add_generation_prompt: true } },
  { name: "print_python_values", template: "{{ none }}|{{ true }}|{{ [1, 'a', none] }}|{{ {'k': 'v'} }}|{{ (1,) }}", context: {}, python: "None|True|[1, 'a', None]|{'k': 'v'}|(1,)", why: "{{ }} prints Python's str(): None, True, ['a'] reprs" },
  { name: "tojson_floats", template: "{{ [2.0, 0.5, 1e-7]|tojson }}", context: {}, python: "[2.0, 0.5, 1e-07]", why: "json.dumps writes Python float reprs; JSON.stringify writes 2 and 1e-7" },
  { name: "tools_none", template: "{% if tools %}has tools{% else %}no tools{% endif %}|{{ tools is none }}", context: { tools: null }, python: "no tools|True", why: "booleans print as True/False in Python" },
];
