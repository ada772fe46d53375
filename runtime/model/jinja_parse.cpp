#include "jinja_parse.h"

#include <algorithm>

#include "jinja_lex.h"

namespace wt {

namespace {

using Token = JinjaToken;

Status fail(size_t pos, const std::string& what) { return jinja_syntax_error(pos, what); }

// ---------------------------------------------------------------------------------------
// Parser: recursive descent, Jinja's precedence from the conditional expression down.

// Nested expressions, blocks and chain links: a bound on the parser's stack, and on the
// depth of the tree the renderer and the destructors recurse through.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(std::vector<Token> toks, JinjaProgram* prog) : t_(std::move(toks)), prog_(prog) {}

  Status run() {
    std::string end;
    WT_TRY(body({}, &prog_->body, &end));
    return Status::ok();
  }

 private:
  const Token& cur() const { return t_[k_]; }
  bool is_op(const char* s) const { return cur().t == Token::T::op && cur().s == s; }
  bool is_name(const char* s) const { return cur().t == Token::T::name && cur().s == s; }
  bool accept_op(const char* s) {
    if (!is_op(s)) return false;
    ++k_;
    return true;
  }
  bool accept_name(const char* s) {
    if (!is_name(s)) return false;
    ++k_;
    return true;
  }
  Status expect_op(const char* s) {
    if (!accept_op(s)) return fail(cur().pos, std::string("expected '") + s + "'");
    return Status::ok();
  }
  Status expect_name(std::string* out) {
    if (cur().t != Token::T::name) return fail(cur().pos, "expected a name");
    *out = t_[k_++].s;
    return Status::ok();
  }
  Status end_stmt() {
    if (cur().t != Token::T::close_stmt) return fail(cur().pos, "expected the end of the statement");
    ++k_;
    return Status::ok();
  }

  // Nodes up to a statement whose keyword is in `ends` (consumed up to that keyword, which is
  // returned in *end), or the end of the template when `ends` is empty.
  Status body(const std::vector<std::string>& ends, std::vector<JinjaNode>* out, std::string* end) {
    if (++depth_ > kMaxDepth) return fail(cur().pos, "blocks nested too deeply");
    for (;;) {
      const Token& tok = cur();
      if (tok.t == Token::T::end) {
        if (!ends.empty()) return fail(tok.pos, "a block not closed (expected " + ends.back() + ")");
        break;
      }
      if (tok.t == Token::T::text) {
        JinjaNode n;
        n.kind = JinjaNode::Kind::text, n.text = tok.s, n.pos = tok.pos;
        out->push_back(std::move(n));
        ++k_;
        continue;
      }
      if (tok.t == Token::T::open_expr) {
        ++k_;
        JinjaNode n;
        n.kind = JinjaNode::Kind::output, n.pos = tok.pos;
        n.exprs.emplace_back();
        WT_TRY(tuple(&n.exprs.back()));
        if (cur().t != Token::T::close_expr) return fail(cur().pos, "expected '}}'");
        ++k_;
        out->push_back(std::move(n));
        continue;
      }
      ++k_;  // open_stmt
      if (cur().t != Token::T::name) return fail(cur().pos, "expected a statement");
      const std::string kw = cur().s;
      if (std::find(ends.begin(), ends.end(), kw) != ends.end()) {
        ++k_;
        *end = kw;
        break;
      }
      WT_TRY(statement(out));
    }
    --depth_;
    return Status::ok();
  }

  Status statement(std::vector<JinjaNode>* out) {
    const size_t pos = cur().pos;
    const std::string kw = t_[k_++].s;
    JinjaNode n;
    n.pos = pos;
    std::string end;
    if (kw == "if") {
      n.kind = JinjaNode::Kind::if_;
      for (;;) {
        n.exprs.emplace_back();
        WT_TRY(expression(&n.exprs.back(), true));
        WT_TRY(end_stmt());
        n.bodies.emplace_back();
        WT_TRY(body({"elif", "else", "endif"}, &n.bodies.back(), &end));
        if (end != "elif") break;
      }
      if (end == "else") {
        WT_TRY(end_stmt());
        n.bodies.emplace_back();
        WT_TRY(body({"endif"}, &n.bodies.back(), &end));
      }
    } else if (kw == "for") {
      n.kind = JinjaNode::Kind::for_;
      WT_TRY(targets(&n.targets));
      if (!accept_name("in")) return fail(cur().pos, "expected 'in'");
      n.exprs.emplace_back();
      WT_TRY(expression(&n.exprs.back(), false));
      if (accept_name("if")) {
        n.exprs.emplace_back();
        WT_TRY(expression(&n.exprs.back(), false));
      }
      if (is_name("recursive")) return fail(cur().pos, "a recursive loop");
      WT_TRY(end_stmt());
      n.bodies.resize(2);
      ++loops_;
      WT_TRY(body({"else", "endfor"}, &n.bodies[0], &end));
      --loops_;
      if (end == "else") {
        WT_TRY(end_stmt());
        WT_TRY(body({"endfor"}, &n.bodies[1], &end));
      }
    } else if (kw == "set") {
      WT_TRY(targets(&n.targets));
      if (n.targets.size() == 1 && accept_op(".")) {
        WT_TRY(expect_name(&n.attr));
      }
      if (accept_op("=")) {
        n.kind = JinjaNode::Kind::set;
        n.exprs.emplace_back();
        WT_TRY(tuple(&n.exprs.back()));
      } else {
        if (n.targets.size() != 1 || !n.attr.empty()) return fail(pos, "a block set of more than one name");
        n.kind = JinjaNode::Kind::set_block;
        WT_TRY(end_stmt());
        n.bodies.emplace_back();
        WT_TRY(body({"endset"}, &n.bodies.back(), &end));
      }
    } else if (kw == "macro") {
      auto m = std::make_unique<JinjaMacro>();
      WT_TRY(expect_name(&m->name));
      WT_TRY(expect_op("("));
      while (!accept_op(")")) {
        if (!m->params.empty()) WT_TRY(expect_op(","));
        if (accept_op(")")) break;
        m->params.emplace_back();
        WT_TRY(expect_name(&m->params.back()));
        m->defaults.emplace_back();
        if (accept_op("=")) WT_TRY(expression(&m->defaults.back(), true));
      }
      WT_TRY(end_stmt());
      const int loops = loops_;
      loops_ = 0;  // a loop around the definition is no loop of the macro's body
      WT_TRY(body({"endmacro"}, &m->body, &end));
      loops_ = loops;
      n.kind = JinjaNode::Kind::macro;
      n.text = m->name;
      n.macro_index = prog_->macros.size();
      prog_->macros.push_back(std::move(m));
    } else if (kw == "break" || kw == "continue") {
      if (loops_ == 0) return fail(pos, "'" + kw + "' outside a loop");
      n.kind = kw == "break" ? JinjaNode::Kind::break_ : JinjaNode::Kind::continue_;
    } else if (kw == "generation") {  // transformers' marker of the assistant's text: writes its body
      WT_TRY(end_stmt());
      std::vector<JinjaNode> inner;
      WT_TRY(body({"endgeneration"}, &inner, &end));
      WT_TRY(end_stmt());
      for (auto& x : inner) out->push_back(std::move(x));
      return Status::ok();
    } else {
      return fail(pos, "the statement '" + kw + "', which Whittle's Jinja does not run");
    }
    WT_TRY(end_stmt());
    out->push_back(std::move(n));
    return Status::ok();
  }

  // `a` or `a, b, ...` (names to assign).
  Status targets(std::vector<std::string>* out) {
    do {
      out->emplace_back();
      WT_TRY(expect_name(&out->back()));
    } while (accept_op(","));
    return Status::ok();
  }

  // A chain (a + b + c, x.a.b, x|f|g) nests one tree level per link, which evaluating and
  // freeing it recurse through: each link counts toward the depth until the chain ends.
  Status link(int* links) {
    ++*links;
    if (++depth_ > kMaxDepth) return fail(cur().pos, "an expression nested too deeply");
    return Status::ok();
  }

  JinjaExprPtr node(JinjaExpr::Op op, size_t pos) {
    auto e = std::make_unique<JinjaExpr>();
    e->op = op, e->pos = pos;
    return e;
  }

  // An expression, or a tuple of them without parentheses (`{{ a, b }}`, `set x = a, b`).
  Status tuple(JinjaExprPtr* out) {
    const size_t pos = cur().pos;
    WT_TRY(expression(out, true));
    if (!is_op(",")) return Status::ok();
    auto list = node(JinjaExpr::Op::list, pos);
    list->name = "tuple";
    list->args.push_back(std::move(*out));
    while (accept_op(",")) {
      if (cur().t == Token::T::close_expr || cur().t == Token::T::close_stmt) break;
      list->args.emplace_back();
      WT_TRY(expression(&list->args.back(), true));
    }
    *out = std::move(list);
    return Status::ok();
  }

  Status expression(JinjaExprPtr* out, bool with_cond) {
    if (++depth_ > kMaxDepth) return fail(cur().pos, "an expression nested too deeply");
    WT_TRY(or_expr(out));
    int links = 0;
    while (with_cond && is_name("if")) {
      WT_TRY(link(&links));
      auto c = node(JinjaExpr::Op::cond, t_[k_++].pos);
      c->args.resize(3);
      WT_TRY(or_expr(&c->args[0]));
      c->args[1] = std::move(*out);
      if (accept_name("else")) WT_TRY(expression(&c->args[2], true));
      *out = std::move(c);
    }
    depth_ -= links + 1;
    return Status::ok();
  }

  // `a or b or ...` and `a and b and ...`: left-associative chains of a keyword.
  Status logical(JinjaExprPtr* out, JinjaExpr::Op op, const char* word, Status (Parser::*next)(JinjaExprPtr*)) {
    WT_TRY((this->*next)(out));
    int links = 0;
    while (is_name(word)) {
      WT_TRY(link(&links));
      auto e = node(op, t_[k_++].pos);
      e->args.push_back(std::move(*out));
      e->args.emplace_back();
      WT_TRY((this->*next)(&e->args.back()));
      *out = std::move(e);
    }
    depth_ -= links;
    return Status::ok();
  }
  Status or_expr(JinjaExprPtr* out) { return logical(out, JinjaExpr::Op::or_, "or", &Parser::and_expr); }
  Status and_expr(JinjaExprPtr* out) { return logical(out, JinjaExpr::Op::and_, "and", &Parser::not_expr); }

  Status not_expr(JinjaExprPtr* out) {
    if (!is_name("not")) return compare(out);
    if (++depth_ > kMaxDepth) return fail(cur().pos, "an expression nested too deeply");
    auto e = node(JinjaExpr::Op::not_, t_[k_++].pos);
    e->args.emplace_back();
    WT_TRY(not_expr(&e->args.back()));
    *out = std::move(e);
    --depth_;
    return Status::ok();
  }

  Status compare(JinjaExprPtr* out) {
    const size_t pos = cur().pos;
    WT_TRY(math1(out));
    JinjaExprPtr chain;
    for (;;) {
      std::string op;
      if (cur().t == Token::T::op && (cur().s == "==" || cur().s == "!=" || cur().s == "<" || cur().s == "<=" ||
                                      cur().s == ">" || cur().s == ">=")) {
        op = t_[k_++].s;
      } else if (accept_name("in")) {
        op = "in";
      } else if (is_name("not") && t_[k_ + 1].t == Token::T::name && t_[k_ + 1].s == "in") {
        k_ += 2, op = "notin";
      } else {
        break;
      }
      if (!chain) {
        chain = node(JinjaExpr::Op::compare, pos);
        chain->args.push_back(std::move(*out));
      }
      chain->ops.push_back(op);
      chain->args.emplace_back();
      WT_TRY(math1(&chain->args.back()));
    }
    if (chain) *out = std::move(chain);
    return Status::ok();
  }

  // One left-associative level of binary operators, `next` parsing its operands.
  template <typename Next>
  Status binary(JinjaExprPtr* out, std::initializer_list<const char*> ops, Next next) {
    WT_TRY((this->*next)(out));
    for (int links = 0;;) {
      const char* found = nullptr;
      for (const char* op : ops)
        if (is_op(op)) found = op;
      if (!found) {
        depth_ -= links;
        return Status::ok();
      }
      WT_TRY(link(&links));
      auto e = node(JinjaExpr::Op::binary, t_[k_++].pos);
      e->name = found;
      e->args.push_back(std::move(*out));
      e->args.emplace_back();
      WT_TRY((this->*next)(&e->args.back()));
      *out = std::move(e);
    }
  }
  Status math1(JinjaExprPtr* out) { return binary(out, {"+", "-"}, &Parser::concat); }
  Status concat(JinjaExprPtr* out) { return binary(out, {"~"}, &Parser::math2); }
  Status math2(JinjaExprPtr* out) { return binary(out, {"*", "/", "//", "%"}, &Parser::power); }
  Status power(JinjaExprPtr* out) { return binary(out, {"**"}, &Parser::unary_filtered); }
  Status unary_filtered(JinjaExprPtr* out) { return unary(out, true); }

  Status unary(JinjaExprPtr* out, bool with_filter) {
    if (++depth_ > kMaxDepth) return fail(cur().pos, "an expression nested too deeply");
    if (is_op("-") || is_op("+")) {
      auto e = node(is_op("-") ? JinjaExpr::Op::neg : JinjaExpr::Op::pos, cur().pos);
      ++k_;
      e->args.emplace_back();
      WT_TRY(unary(&e->args.back(), false));
      *out = std::move(e);
    } else {
      WT_TRY(primary(out));
    }
    WT_TRY(postfix(out));
    if (with_filter) WT_TRY(filters(out));
    --depth_;
    return Status::ok();
  }

  Status primary(JinjaExprPtr* out) {
    const Token& tok = cur();
    const size_t pos = tok.pos;
    if (tok.t == Token::T::name) {
      ++k_;
      auto e = node(JinjaExpr::Op::literal, pos);
      if (tok.s == "true" || tok.s == "True") e->value = JinjaValue::boolean(true);
      else if (tok.s == "false" || tok.s == "False") e->value = JinjaValue::boolean(false);
      else if (tok.s == "none" || tok.s == "None") e->value = JinjaValue::none();
      else e->op = JinjaExpr::Op::name, e->name = tok.s;
      *out = std::move(e);
      return Status::ok();
    }
    if (tok.t == Token::T::str) {
      std::string s;
      while (cur().t == Token::T::str) s += t_[k_++].s;  // adjacent literals join, as in Python
      auto e = node(JinjaExpr::Op::literal, pos);
      e->value = JinjaValue::string(std::move(s));
      *out = std::move(e);
      return Status::ok();
    }
    if (tok.t == Token::T::integer || tok.t == Token::T::number) {
      auto e = node(JinjaExpr::Op::literal, pos);
      e->value = tok.t == Token::T::integer ? JinjaValue::integer(tok.i) : JinjaValue::number(tok.f);
      ++k_;
      *out = std::move(e);
      return Status::ok();
    }
    if (accept_op("(")) {
      if (accept_op(")")) {
        *out = node(JinjaExpr::Op::list, pos);
        (*out)->name = "tuple";
        return Status::ok();
      }
      WT_TRY(expression(out, true));
      if (is_op(",")) {
        auto list = node(JinjaExpr::Op::list, pos);
        list->name = "tuple";
        list->args.push_back(std::move(*out));
        while (accept_op(",")) {
          if (is_op(")")) break;
          list->args.emplace_back();
          WT_TRY(expression(&list->args.back(), true));
        }
        *out = std::move(list);
      }
      return expect_op(")");
    }
    if (accept_op("[")) {
      auto list = node(JinjaExpr::Op::list, pos);
      while (!accept_op("]")) {
        if (!list->args.empty()) WT_TRY(expect_op(","));
        if (accept_op("]")) break;
        list->args.emplace_back();
        WT_TRY(expression(&list->args.back(), true));
      }
      *out = std::move(list);
      return Status::ok();
    }
    if (accept_op("{")) {
      auto dict = node(JinjaExpr::Op::dict, pos);
      while (!accept_op("}")) {
        if (!dict->args.empty()) WT_TRY(expect_op(","));
        if (accept_op("}")) break;
        dict->args.emplace_back();
        WT_TRY(expression(&dict->args.back(), true));
        WT_TRY(expect_op(":"));
        dict->args.emplace_back();
        WT_TRY(expression(&dict->args.back(), true));
      }
      *out = std::move(dict);
      return Status::ok();
    }
    return fail(pos, "expected an expression");
  }

  Status postfix(JinjaExprPtr* out) {
    for (int links = 0;;) {
      const size_t pos = cur().pos;
      if (is_op(".") || is_op("[") || is_op("(")) WT_TRY(link(&links));
      if (accept_op(".")) {
        auto e = node(JinjaExpr::Op::attr, pos);
        if (cur().t == Token::T::integer) {  // `x.0` is x[0] in Jinja
          e->op = JinjaExpr::Op::item;
          e->args.push_back(std::move(*out));
          auto idx = node(JinjaExpr::Op::literal, cur().pos);
          idx->value = JinjaValue::integer(t_[k_++].i);
          e->args.push_back(std::move(idx));
        } else {
          WT_TRY(expect_name(&e->name));
          e->args.push_back(std::move(*out));
        }
        *out = std::move(e);
      } else if (accept_op("[")) {
        WT_TRY(subscript(out, pos));
      } else if (is_op("(")) {
        WT_TRY(call(out));
      } else {
        depth_ -= links;
        return Status::ok();
      }
    }
  }

  Status subscript(JinjaExprPtr* out, size_t pos) {
    JinjaExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    for (;;) {
      if (accept_op("]")) break;
      if (accept_op(":")) {
        if (++part > 2) return fail(cur().pos, "a slice with more than three parts");
        is_slice = true;
        continue;
      }
      if (parts[part]) return fail(cur().pos, "expected ']'");
      WT_TRY(expression(&parts[part], true));
    }
    if (!is_slice && !parts[0]) return fail(pos, "an empty subscript");
    auto e = node(is_slice ? JinjaExpr::Op::slice : JinjaExpr::Op::item, pos);
    e->args.push_back(std::move(*out));
    for (int p = 0; p < (is_slice ? 3 : 1); ++p) e->args.push_back(std::move(parts[p]));
    *out = std::move(e);
    return Status::ok();
  }

  // Call arguments from '(' to ')': positional, then name=value.
  Status arguments(JinjaExpr* e) {
    WT_TRY(expect_op("("));
    bool first = true;
    while (!accept_op(")")) {
      if (!first) WT_TRY(expect_op(","));
      first = false;
      if (accept_op(")")) break;
      if (is_op("*") || is_op("**")) return fail(cur().pos, "unpacked call arguments");
      if (cur().t == Token::T::name && t_[k_ + 1].t == Token::T::op && t_[k_ + 1].s == "=") {
        std::string key = t_[k_].s;
        k_ += 2;
        e->kwargs.emplace_back(std::move(key), nullptr);
        WT_TRY(expression(&e->kwargs.back().second, true));
        continue;
      }
      if (!e->kwargs.empty()) return fail(cur().pos, "a positional argument after a keyword argument");
      e->args.emplace_back();
      WT_TRY(expression(&e->args.back(), true));
    }
    return Status::ok();
  }

  Status call(JinjaExprPtr* out) {
    auto e = node(JinjaExpr::Op::call, cur().pos);
    e->args.push_back(std::move(*out));
    WT_TRY(arguments(e.get()));
    *out = std::move(e);
    return Status::ok();
  }

  Status filters(JinjaExprPtr* out) {
    for (int links = 0;;) {
      const size_t pos = cur().pos;
      if (is_op("|") || is_name("is") || is_op("(")) WT_TRY(link(&links));
      if (accept_op("|")) {
        auto e = node(JinjaExpr::Op::filter, pos);
        WT_TRY(dotted_name(&e->name));
        if (!jinja_known_filter(e->name)) return fail(pos, "the filter '" + e->name + "', which Whittle's Jinja lacks");
        e->args.push_back(std::move(*out));
        if (is_op("(")) WT_TRY(arguments(e.get()));
        *out = std::move(e);
      } else if (accept_name("is")) {
        auto e = node(JinjaExpr::Op::test, pos);
        e->negated = accept_name("not");
        WT_TRY(dotted_name(&e->name));
        if (!jinja_known_test(e->name)) return fail(pos, "the test '" + e->name + "', which Whittle's Jinja lacks");
        e->args.push_back(std::move(*out));
        const Token& a = cur();
        if (is_op("(")) {
          WT_TRY(arguments(e.get()));
        } else if ((a.t == Token::T::name || a.t == Token::T::str || a.t == Token::T::integer ||
                    a.t == Token::T::number || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          e->args.emplace_back();  // `is divisibleby 3`, `is equalto 'user'`: one argument without parentheses
          WT_TRY(primary(&e->args.back()));
          WT_TRY(postfix(&e->args.back()));
        }
        *out = std::move(e);
      } else if (is_op("(")) {
        WT_TRY(call(out));
      } else {
        depth_ -= links;
        return Status::ok();
      }
    }
  }

  Status dotted_name(std::string* out) {
    WT_TRY(expect_name(out));
    while (is_op(".") && t_[k_ + 1].t == Token::T::name) {
      *out += "." + t_[k_ + 1].s;
      k_ += 2;
    }
    return Status::ok();
  }

  std::vector<Token> t_;
  size_t k_ = 0;
  int depth_ = 0;
  int loops_ = 0;  // for bodies around the statement being read
  JinjaProgram* prog_;
};

}  // namespace

Status jinja_parse(const std::string& source, JinjaProgram* out) {
  *out = JinjaProgram{};
  std::vector<Token> toks;
  WT_TRY(jinja_lex(source, &toks));
  return Parser(std::move(toks), out).run();
}

}  // namespace wt
