// A Jinja template read into a tree (jinja.h runs it): the part of Jinja that chat
// templates use, with the whitespace rules transformers renders them with. Anything else is
// refused when the template is read, naming what was found, never skipped.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "jinja_value.h"

namespace wt {

struct JinjaExpr;
using JinjaExprPtr = std::unique_ptr<JinjaExpr>;

struct JinjaExpr {
  enum class Op : uint8_t {
    literal,  // value
    name,     // name
    list,     // args: the items (tuples are lists)
    dict,     // args: key, value, key, value, ...
    attr,     // args[0].name
    item,     // args[0][args[1]]
    slice,    // args[0][args[1]:args[2]:args[3]], a null arg where the slice omits it
    call,     // args[0](args[1..], kwargs)
    filter,   // args[0] | name(args[1..], kwargs)
    test,     // args[0] is [not] name(args[1..])
    neg,      // -args[0]
    pos,      // +args[0]
    not_,     // not args[0]
    and_,     // args[0] and args[1]
    or_,      // args[0] or args[1]
    binary,   // args[0] name args[1], name one of + - * / // % ** ~
    compare,  // args[0] ops[0] args[1] ops[1] args[2] ..., ops: == != < <= > >= in notin
    cond,     // args[1] if args[0] else args[2] (null: Undefined)
  };
  Op op = Op::literal;
  std::string name;
  JinjaValue value;
  bool negated = false;
  std::vector<JinjaExprPtr> args;
  std::vector<std::pair<std::string, JinjaExprPtr>> kwargs;
  std::vector<std::string> ops;
  size_t pos = 0;  // byte offset in the template, for messages
};

struct JinjaNode {
  enum class Kind : uint8_t {
    text,       // text
    output,     // {{ exprs[0] }}
    if_,        // exprs: the conditions of if and each elif; bodies: theirs, then else's if any
    for_,       // for targets in exprs[0] [if exprs[1]]: bodies[0], else bodies[1]
    set,        // set targets = exprs[0]; set name.attr = exprs[0] (attr set)
    set_block,  // set targets[0] %} bodies[0] {% endset
    macro,      // macro_index: defines the macro under its name
    break_,
    continue_,
  };
  Kind kind = Kind::text;
  std::string text;
  std::string attr;
  std::vector<std::string> targets;
  std::vector<JinjaExprPtr> exprs;
  std::vector<std::vector<JinjaNode>> bodies;
  size_t macro_index = 0;
  size_t pos = 0;
};

struct JinjaMacro {
  std::string name;
  std::vector<std::string> params;
  std::vector<JinjaExprPtr> defaults;  // one per parameter, null where it has none
  std::vector<JinjaNode> body;
};

struct JinjaProgram {
  std::vector<JinjaNode> body;
  std::vector<std::unique_ptr<JinjaMacro>> macros;
};

// Reads a template as transformers' Jinja environment does: trim_blocks, lstrip_blocks,
// the '-' and '+' whitespace markers, the last newline dropped, "\r\n" read as "\n".
// WT_ERR_UNSUPPORTED for a syntax error and for what this subset lacks (include, extends,
// import, call and filter blocks, raw, recursive loops, a filter or test it does not know),
// with the byte offset.
Status jinja_parse(const std::string& source, JinjaProgram* out);

// The filters and tests jinja_parse accepts (jinja_builtins.cpp implements them).
bool jinja_known_filter(const std::string& name);
bool jinja_known_test(const std::string& name);

}  // namespace wt
