#include <algorithm>
#include <cmath>

#include "jinja.h"
#include "jinja_builtins.h"

namespace wt {

namespace {

using Kind = JinjaValue::Kind;
using Op = JinjaExpr::Op;
using Frame = JinjaDict;

enum class Flow { normal, break_, continue_ };

constexpr uint32_t kMaxNesting = kJinjaMaxNesting;
constexpr size_t kMaxItems = kJinjaMaxItems;
constexpr uint64_t kMaxCost = kJinjaMaxCost;
// eval and exec frames on the stack at once, macros included: a few KiB each (more under
// ASan), well inside a thread's stack.
constexpr int kMaxRecursion = 400;

// Python's slice indices for a sequence of n items (PySlice_AdjustIndices).
Status slice_indices(const JinjaValue* start, const JinjaValue* stop, const JinjaValue* step, int64_t n,
                     std::vector<int64_t>* out) {
  const auto get = [](const JinjaValue* v, int64_t fallback, int64_t* r) -> Status {
    if (!v || v->kind == Kind::none) {
      *r = fallback;
      return Status::ok();
    }
    if (v->kind != Kind::integer && v->kind != Kind::boolean) return jinja_error("a slice index that is not an integer");
    *r = v->kind == Kind::integer ? v->i : v->b;
    return Status::ok();
  };
  int64_t st = 1;
  WT_TRY(get(step, 1, &st));
  if (st == 0) return jinja_error("a slice step of zero");
  int64_t a = 0, b = 0;
  WT_TRY(get(start, st > 0 ? 0 : n - 1, &a));
  WT_TRY(get(stop, st > 0 ? n : -1 - n, &b));  // -1 - n: past the front after the adjustment below
  const auto adjust = [&](int64_t* v, bool is_start) {
    if ((is_start && (!start || start->kind == Kind::none)) || (!is_start && (!stop || stop->kind == Kind::none)))
      return;
    if (*v < 0) {
      *v += n;
      if (*v < 0) *v = st < 0 ? -1 : 0;
    } else if (*v >= n) {
      *v = st < 0 ? n - 1 : n;
    }
  };
  adjust(&a, true);
  adjust(&b, false);
  if (st < 0 && (!stop || stop->kind == Kind::none)) b = -1;
  out->clear();
  for (int64_t k = a; st > 0 ? k < b : k > b; k += st) out->push_back(k);
  return Status::ok();
}

class Renderer {
 public:
  Renderer(const JinjaProgram& p, const JinjaDict& globals, const JinjaRenderOptions& o)
      : prog_(p), globals_(globals), opt_(o) {
    frames_.emplace_back();
  }

  Status run(std::string* out) {
    out_ = out;
    Flow flow = Flow::normal;
    return exec(prog_.body, &flow);
  }

 private:
  // The work a template does, bounded: a step per node run, expression evaluated and loop
  // iteration, and per item or 256 bytes a value copies.
  Status charge(uint64_t n) {
    steps_ += n;
    if (steps_ > opt_.limits.max_steps) return jinja_error("the template runs too long");
    return Status::ok();
  }
  Status step() { return charge(1); }

  Status write(const std::string& s) {
    if (out_->size() + s.size() > opt_.limits.max_output_bytes) return jinja_error("the template writes too much");
    *out_ += s;
    return Status::ok();
  }

  // A name from the innermost frame out; inside a macro, its own frames then the template's
  // top level (frames_[0]), not its caller's.
  JinjaValue lookup(const std::string& name) const {
    for (size_t f = frames_.size(); f-- > 0;) {
      if (f > 0 && f < barrier_) f = 0;
      for (const auto& [k, v] : frames_[f])
        if (k == name) return v;
    }
    for (const auto& [k, v] : globals_)
      if (k == name) return v;
    if (name == "range" || name == "namespace" || name == "dict") return JinjaValue::function(name);
    return JinjaValue();
  }

  static void assign(Frame* f, const std::string& name, JinjaValue v) {
    for (auto& [k, old] : *f)
      if (k == name) {
        old = std::move(v);
        return;
      }
    f->emplace_back(name, std::move(v));
  }

  Status assign_targets(const std::vector<std::string>& targets, const JinjaValue& v, Frame* f) {
    if (targets.size() == 1) {
      assign(f, targets[0], v);
      return Status::ok();
    }
    if (v.kind != Kind::list || v.list->size() != targets.size())
      return jinja_error("cannot unpack a value into " + std::to_string(targets.size()) + " names");
    for (size_t k = 0; k < targets.size(); ++k) assign(f, targets[k], (*v.list)[k]);
    return Status::ok();
  }

  // ---- statements

  Status exec(const std::vector<JinjaNode>& nodes, Flow* flow) {
    if (++nesting_ > kMaxRecursion) return jinja_error("expressions and blocks nested too deeply");
    const Status s = exec_nodes(nodes, flow);
    --nesting_;
    return s;
  }

  Status exec_nodes(const std::vector<JinjaNode>& nodes, Flow* flow) {
    for (const JinjaNode& n : nodes) {
      WT_TRY(step());
      switch (n.kind) {
        case JinjaNode::Kind::text: WT_TRY(write(n.text)); break;
        case JinjaNode::Kind::output: {
          JinjaValue v;
          WT_TRY(eval(*n.exprs[0], &v));
          WT_TRY(charge(v.cost));
          WT_TRY(write(jinja_str(v)));
          break;
        }
        case JinjaNode::Kind::if_: {
          size_t k = 0;
          for (; k < n.exprs.size(); ++k) {
            JinjaValue c;
            WT_TRY(eval(*n.exprs[k], &c));
            if (jinja_truthy(c)) break;
          }
          if (k < n.bodies.size()) WT_TRY(exec(n.bodies[k], flow));
          break;
        }
        case JinjaNode::Kind::for_: WT_TRY(exec_for(n)); break;
        case JinjaNode::Kind::set: {
          JinjaValue v;
          WT_TRY(eval(*n.exprs[0], &v));
          if (n.attr.empty()) {
            WT_TRY(assign_targets(n.targets, v, &frames_.back()));
            break;
          }
          const JinjaValue ns = lookup(n.targets[0]);
          if (ns.kind != Kind::ns) return jinja_error("set of an attribute of '" + n.targets[0] + "', not a namespace");
          WT_TRY(no_namespace(v));
          assign(ns.dict.get(), n.attr, std::move(v));
          break;
        }
        case JinjaNode::Kind::set_block: {
          std::string captured;
          WT_TRY(capture(n.bodies[0], &captured));
          assign(&frames_.back(), n.targets[0], JinjaValue::string(std::move(captured)));
          break;
        }
        case JinjaNode::Kind::macro: {
          JinjaValue m;
          m.kind = Kind::macro, m.s = n.text, m.macro = prog_.macros[n.macro_index].get();
          assign(&frames_.back(), n.text, std::move(m));
          break;
        }
        case JinjaNode::Kind::break_: *flow = Flow::break_; return Status::ok();
        case JinjaNode::Kind::continue_: *flow = Flow::continue_; return Status::ok();
      }
      if (*flow != Flow::normal) return Status::ok();
    }
    return Status::ok();
  }

  Status capture(const std::vector<JinjaNode>& body, std::string* captured) {
    std::string* saved = out_;
    out_ = captured;
    Flow inner = Flow::normal;
    const Status s = exec(body, &inner);
    out_ = saved;
    return s;
  }

  Status exec_for(const JinjaNode& n) {
    JinjaValue seq;
    WT_TRY(eval(*n.exprs[0], &seq));
    if (seq.kind == Kind::dict || seq.kind == Kind::string || seq.kind == Kind::undefined) {
      JinjaArgs budget;
      budget.steps = &steps_, budget.max_steps = opt_.limits.max_steps;
      WT_TRY(jinja_filter("list", seq, budget, &seq));
    } else if (seq.kind != Kind::list) {
      return jinja_error("a for loop over a value that is not iterable");
    }
    const std::shared_ptr<const JinjaList> all = seq.list;  // kept alive whatever the body rebinds
    std::vector<const JinjaValue*> items;                   // the items the loop sees, not copies
    for (const JinjaValue& item : *all) {
      if (n.exprs.size() > 1) {  // `for x in xs if cond`: only the items that pass
        WT_TRY(charge(1 + item.cost));
        frames_.emplace_back();
        Status s = assign_targets(n.targets, item, &frames_.back());
        JinjaValue keep;
        if (s) s = eval(*n.exprs[1], &keep);
        frames_.pop_back();
        WT_TRY(s);
        if (!jinja_truthy(keep)) continue;
      }
      items.push_back(&item);
    }
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t k = 0; k < len; ++k) {
      const JinjaValue& item = *items[static_cast<size_t>(k)];
      // Each iteration copies its item, and loop.previtem and loop.nextitem.
      WT_TRY(charge(1 + item.cost + (k > 0 ? items[static_cast<size_t>(k - 1)]->cost : 0) +
                    (k + 1 < len ? items[static_cast<size_t>(k + 1)]->cost : 0)));
      JinjaDict loop = {
          {"index", JinjaValue::integer(k + 1)},       {"index0", JinjaValue::integer(k)},
          {"revindex", JinjaValue::integer(len - k)},  {"revindex0", JinjaValue::integer(len - k - 1)},
          {"first", JinjaValue::boolean(k == 0)},      {"last", JinjaValue::boolean(k == len - 1)},
          {"length", JinjaValue::integer(len)},
      };
      if (k > 0) loop.emplace_back("previtem", *items[static_cast<size_t>(k - 1)]);
      if (k + 1 < len) loop.emplace_back("nextitem", *items[static_cast<size_t>(k + 1)]);
      frames_.emplace_back();
      Status s = assign_targets(n.targets, item, &frames_.back());
      // A namespace, as jinja2's loop object is no dict: never printed or compared item by item.
      assign(&frames_.back(), "loop", JinjaValue::of_dict(std::move(loop), Kind::ns));
      Flow flow = Flow::normal;
      if (s) s = exec(n.bodies[0], &flow);
      frames_.pop_back();
      WT_TRY(s);
      if (flow == Flow::break_) break;
    }
    if (items.empty()) {
      Flow flow = Flow::normal;
      WT_TRY(exec(n.bodies[1], &flow));
    }
    return Status::ok();
  }

  // ---- expressions

  // A call's arguments, `self` the value a filter, test or method reads: the walk of each
  // is charged here, and the builtin gets the budget for its own loops.
  Status eval_args(const JinjaExpr& e, size_t first, const JinjaValue* self, JinjaArgs* a) {
    uint64_t cost = self ? self->cost : 0;
    for (size_t k = first; k < e.args.size(); ++k) {
      a->pos.emplace_back();
      WT_TRY(eval(*e.args[k], &a->pos.back()));
      cost += a->pos.back().cost;
    }
    for (const auto& [name, x] : e.kwargs) {
      a->kw.emplace_back(name, JinjaValue());
      WT_TRY(eval(*x, &a->kw.back().second));
      cost += a->kw.back().second.cost;
    }
    a->steps = &steps_, a->max_steps = opt_.limits.max_steps;
    return charge(cost);
  }

  static Status undefined_error(const JinjaExpr& obj) {
    std::string what = obj.op == Op::name ? "'" + obj.name + "'" : obj.op == Op::attr ? "'" + obj.name + "'" : "a value";
    return jinja_error(what + " is undefined, and has no attribute or item");
  }

  Status attribute(const JinjaExpr& e, JinjaValue* out) {
    JinjaValue obj;
    WT_TRY(eval(*e.args[0], &obj));
    if (obj.kind == Kind::undefined) return undefined_error(*e.args[0]);
    if (jinja_has_method(obj, e.name)) {  // Python's getattr comes first: `message.items` is the method
      *out = JinjaValue::function("method " + e.name);
      return Status::ok();
    }
    const JinjaValue* v = obj.find(e.name);
    *out = v ? *v : JinjaValue();
    return Status::ok();
  }

  Status item(const JinjaValue& obj, const JinjaValue& key, const JinjaExpr& where, JinjaValue* out) {
    *out = JinjaValue();
    if (obj.kind == Kind::undefined) return undefined_error(where);
    if ((obj.kind == Kind::dict || obj.kind == Kind::ns) && key.kind == Kind::string) {
      const JinjaValue* v = obj.find(key.s);
      if (v) *out = *v;
      return Status::ok();
    }
    if ((obj.kind == Kind::list || obj.kind == Kind::string) && (key.kind == Kind::integer || key.kind == Kind::boolean)) {
      std::vector<size_t> at;
      if (obj.kind == Kind::string) at = utf8_offsets(obj.s);
      const int64_t n = obj.kind == Kind::list ? static_cast<int64_t>(obj.list->size()) : static_cast<int64_t>(at.size()) - 1;
      int64_t i = key.kind == Kind::integer ? key.i : key.b;
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Status::ok();  // jinja2: Undefined, not an error
      const size_t u = static_cast<size_t>(i);
      *out = obj.kind == Kind::list ? (*obj.list)[u] : JinjaValue::string(obj.s.substr(at[u], at[u + 1] - at[u]));
    }
    return Status::ok();
  }

  Status slice(const JinjaExpr& e, JinjaValue* out) {
    JinjaValue obj, parts[3];
    WT_TRY(eval(*e.args[0], &obj));
    for (int p = 0; p < 3; ++p)
      if (e.args[1 + p]) WT_TRY(eval(*e.args[1 + p], &parts[p]));
    const auto part = [&](int p) { return e.args[1 + p] ? &parts[p] : nullptr; };
    if (obj.kind == Kind::undefined) return undefined_error(*e.args[0]);
    std::vector<int64_t> idx;
    if (obj.kind == Kind::list) {
      WT_TRY(slice_indices(part(0), part(1), part(2), static_cast<int64_t>(obj.list->size()), &idx));
      JinjaList r;
      for (const int64_t i : idx) r.push_back((*obj.list)[static_cast<size_t>(i)]);
      *out = JinjaValue::of_list(std::move(r));
    } else if (obj.kind == Kind::string) {
      const std::vector<size_t> at = utf8_offsets(obj.s);
      WT_TRY(slice_indices(part(0), part(1), part(2), static_cast<int64_t>(at.size()) - 1, &idx));
      std::string r;
      for (const int64_t i : idx) r.append(obj.s, at[static_cast<size_t>(i)], at[static_cast<size_t>(i) + 1] - at[static_cast<size_t>(i)]);
      *out = JinjaValue::string(std::move(r));
    } else {
      return jinja_error("a slice of a value that is not a list or a string");
    }
    return Status::ok();
  }

  Status call(const JinjaExpr& e, JinjaValue* out) {
    const JinjaExpr& callee = *e.args[0];
    JinjaArgs a;
    if (callee.op == Op::attr) {  // a method: evaluated on its object, not looked up as a value
      JinjaValue obj;
      WT_TRY(eval(*callee.args[0], &obj));
      if (obj.kind == Kind::undefined) return undefined_error(*callee.args[0]);
      if (jinja_has_method(obj, callee.name)) {
        WT_TRY(eval_args(e, 1, &obj, &a));
        return jinja_method(obj, callee.name, a, out);
      }
    }
    JinjaValue f;
    WT_TRY(eval(callee, &f));
    WT_TRY(eval_args(e, 1, nullptr, &a));
    if (f.kind == Kind::macro) return call_macro(*f.macro, a, out);
    if (f.kind != Kind::function) return jinja_error("a call of a value that is not a function");
    if (f.s == "raise_exception") {
      const JinjaValue* msg = a.get(0, "message");
      return error(WT_ERR_INVALID_ARGUMENT, "chat template: " + (msg ? jinja_str(*msg) : std::string("an error")));
    }
    if (f.s == "strftime_now") {
      const JinjaValue* fmt = a.get(0, "format");
      if (!fmt || fmt->kind != Kind::string) return jinja_error("strftime_now needs a format");
      // No conversion writes more than 16 bytes per byte of its format ("%c": 24 for 2).
      if (fmt->s.size() > kJinjaMaxBytes / 16) return jinja_error("strftime_now's format is too long");
      std::string buf(fmt->s.size() * 16 + 64, '\0');
      const size_t n = std::strftime(buf.data(), buf.size(), fmt->s.c_str(), &opt_.now);
      buf.resize(n);
      *out = JinjaValue::string(std::move(buf));
      return Status::ok();
    }
    if (f.s == "namespace" || f.s == "dict") {
      JinjaDict d;
      if (f.s == "namespace" && !a.pos.empty()) {
        if (a.pos.size() > 1 || a.pos[0].kind != Kind::dict) return jinja_error("namespace() of more than a dict");
        d = *a.pos[0].dict;
      }
      for (auto& [k, v] : a.kw) {
        WT_TRY(no_namespace(v));
        assign(&d, k, v);
      }
      *out = JinjaValue::of_dict(std::move(d), f.s == "namespace" ? Kind::ns : Kind::dict);
      return Status::ok();
    }
    if (f.s == "range") {
      int64_t r[3] = {0, 0, 1};
      if (a.pos.empty() || a.pos.size() > 3) return jinja_error("range takes one to three integers");
      for (size_t k = 0; k < a.pos.size(); ++k) {
        if (a.pos[k].kind != Kind::integer) return jinja_error("range of a non-integer");
        r[a.pos.size() == 1 ? 1 : k] = a.pos[k].i;
      }
      if (r[2] == 0) return jinja_error("range with a step of zero");
      JinjaList items;
      for (int64_t v = r[0]; r[2] > 0 ? v < r[1] : v > r[1];) {
        if (items.size() >= kMaxItems) return jinja_error("a range of more than 100000 items");
        items.push_back(JinjaValue::integer(v));
        if (__builtin_add_overflow(v, r[2], &v)) break;  // past int64: past the stop too
      }
      WT_TRY(charge(items.size()));
      *out = JinjaValue::of_list(std::move(items));
      return Status::ok();
    }
    return jinja_error("a call of '" + f.s + "'");
  }

  Status call_macro(const JinjaMacro& m, const JinjaArgs& a, JinjaValue* out) {
    if (a.pos.size() > m.params.size()) return jinja_error("the macro '" + m.name + "' given too many arguments");
    for (const auto& kw : a.kw)
      if (std::find(m.params.begin(), m.params.end(), kw.first) == m.params.end())
        return jinja_error("the macro '" + m.name + "' has no parameter '" + kw.first + "'");
    if (++depth_ > opt_.limits.max_call_depth) return jinja_error("macros call each other too deeply");
    const size_t barrier = barrier_;
    barrier_ = frames_.size();  // below it, only the top level is seen
    frames_.emplace_back();
    Status s = Status::ok();
    for (size_t k = 0; k < m.params.size() && s; ++k) {
      const JinjaValue* given = a.get(k < a.pos.size() ? k : m.params.size(), m.params[k].c_str());
      JinjaValue v;
      if (given) v = *given;
      else if (m.defaults[k]) s = eval(*m.defaults[k], &v);
      assign(&frames_.back(), m.params[k], std::move(v));
    }
    std::string captured;
    if (s) s = capture(m.body, &captured);
    frames_.pop_back();
    barrier_ = barrier;
    --depth_;
    WT_TRY(s);
    *out = JinjaValue::string(std::move(captured));
    return Status::ok();
  }

  Status arithmetic(const std::string& op, const JinjaValue& a, const JinjaValue& b, JinjaValue* out) {
    if (op == "~") {
      std::string s = jinja_str(a) + jinja_str(b);
      if (s.size() > kJinjaMaxBytes) return jinja_error("a string too long");
      *out = JinjaValue::string(std::move(s));
      return Status::ok();
    }
    if (op == "+" && a.kind == Kind::string && b.kind == Kind::string) {
      if (a.s.size() + b.s.size() > kJinjaMaxBytes) return jinja_error("a string too long");
      *out = JinjaValue::string(a.s + b.s);
      return Status::ok();
    }
    if (op == "+" && a.kind == Kind::list && b.kind == Kind::list) {
      if (a.list->size() + b.list->size() > kMaxItems) return jinja_error("a list of more than 100000 items");
      WT_TRY(charge(a.cost + b.cost));  // the items it copies
      JinjaList r = *a.list;
      r.insert(r.end(), b.list->begin(), b.list->end());
      *out = JinjaValue::of_list(std::move(r));
      return Status::ok();
    }
    if (op == "*" && a.kind == Kind::integer && (b.kind == Kind::string || b.kind == Kind::list))
      return arithmetic(op, b, a, out);  // 3 * 'ab' is 'ab' * 3
    if (op == "*" && (a.kind == Kind::string || a.kind == Kind::list) && b.kind == Kind::integer) {
      const size_t unit = a.kind == Kind::string ? a.s.size() : a.list->size();
      const int64_t times = std::max<int64_t>(b.i, 0);
      if (unit > 0 && static_cast<uint64_t>(times) > (a.kind == Kind::string ? kJinjaMaxBytes : kMaxItems) / unit)
        return jinja_error("a repetition too long");
      WT_TRY(charge(a.cost * static_cast<uint64_t>(times)));  // what it copies, before it does
      if (a.kind == Kind::string) {
        std::string r;
        for (int64_t k = 0; k < times; ++k) r += a.s;
        *out = JinjaValue::string(std::move(r));
      } else {
        JinjaList r;
        for (int64_t k = 0; k < times; ++k) r.insert(r.end(), a.list->begin(), a.list->end());
        *out = JinjaValue::of_list(std::move(r));
      }
      return Status::ok();
    }
    if (!a.is_numeric() || !b.is_numeric()) return jinja_error("'" + op + "' of values that are not numbers");
    const bool ints = a.kind != Kind::number && b.kind != Kind::number;
    const int64_t x = a.kind == Kind::integer ? a.i : a.b, y = b.kind == Kind::integer ? b.i : b.b;
    const double fx = jinja_number(a), fy = jinja_number(b);
    int64_t r = 0;  // + - * of ints; past int64 (Python's ints have no end) as floats
    const bool exact = ints && (op == "+"   ? !__builtin_add_overflow(x, y, &r)
                                : op == "-" ? !__builtin_sub_overflow(x, y, &r)
                                : op == "*" ? !__builtin_mul_overflow(x, y, &r)
                                            : false);
    if (op == "/") {
      if (fy == 0) return jinja_error("division by zero");
      *out = JinjaValue::number(fx / fy);
    } else if (op == "//" || op == "%") {
      if (fy == 0) return jinja_error("division by zero");
      if (ints) {
        int64_t q = x / y, r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) --q, r += y;  // Python floors
        *out = JinjaValue::integer(op == "//" ? q : r);
      } else {
        const double q = std::floor(fx / fy);
        *out = JinjaValue::number(op == "//" ? q : fx - q * fy);
      }
    } else if (op == "**") {
      bool exact_pow = ints && y >= 0;  // an int to a natural power is an int, exactly, as in Python
      int64_t p = 1;
      if (exact_pow && (x == 0 || x == 1 || x == -1)) {
        p = x == 0 ? (y == 0 ? 1 : 0) : x == 1 || y % 2 == 0 ? 1 : -1;
      } else {
        for (int64_t k = 0; exact_pow && k < y; ++k)  // |x| >= 2: past int64 within 63 steps
          exact_pow = !__builtin_mul_overflow(p, x, &p);
      }
      if (exact_pow) *out = JinjaValue::integer(p);
      else *out = JinjaValue::number(std::pow(fx, fy));
    } else if (exact) {
      *out = JinjaValue::integer(r);
    } else {
      *out = JinjaValue::number(op == "+" ? fx + fy : op == "-" ? fx - fy : fx * fy);
    }
    return Status::ok();
  }

  Status compare(const std::string& op, const JinjaValue& a, const JinjaValue& b, bool* out) {
    WT_TRY(charge(a.cost + b.cost));
    if (op == "==") *out = jinja_equal(a, b);
    else if (op == "!=") *out = !jinja_equal(a, b);
    else if (op == "in" || op == "notin") {
      JinjaArgs args;
      args.pos.push_back(b);
      args.steps = &steps_, args.max_steps = opt_.limits.max_steps;
      WT_TRY(jinja_test("in", a, args, out));
      if (op == "notin") *out = !*out;
    } else {
      bool ok = true;
      const bool lt = jinja_less(a, b, &ok), gt = jinja_less(b, a, &ok);
      if (!ok) return jinja_error("'" + op + "' of values that do not compare");
      *out = op == "<" ? lt : op == ">" ? gt : op == "<=" ? !gt : !lt;
    }
    return Status::ok();
  }

  // Every value a template makes passes here: none nests deeper than kMaxNesting, and none
  // holds a namespace (which could then hold itself).
  Status eval(const JinjaExpr& e, JinjaValue* out) {
    WT_TRY(step());
    if (++nesting_ > kMaxRecursion) return jinja_error("expressions and blocks nested too deeply");
    const Status s = eval_op(e, out);
    --nesting_;
    WT_TRY(s);
    WT_TRY(charge(out->s.size() / JinjaValue::kStringCostBytes));  // the copy it made
    if (out->holds_ns) return jinja_error("a namespace inside a list or a dict");
    if (out->depth > kMaxNesting) return jinja_error("lists or dicts nested too deeply");
    if (out->cost > kMaxCost) return jinja_error("a value too large (lists holding lists many times over)");
    return Status::ok();
  }

  static Status no_namespace(const JinjaValue& v) {
    if (v.kind == Kind::ns) return jinja_error("a namespace inside a list, a dict or a namespace");
    return Status::ok();
  }

  Status eval_op(const JinjaExpr& e, JinjaValue* out) {
    switch (e.op) {
      case Op::literal: *out = e.value; return Status::ok();
      case Op::name: *out = lookup(e.name); return Status::ok();
      case Op::list: {
        JinjaList items(e.args.size());
        for (size_t k = 0; k < e.args.size(); ++k) {
          WT_TRY(eval(*e.args[k], &items[k]));
        }
        *out = JinjaValue::of_list(std::move(items), e.name == "tuple");
        return Status::ok();
      }
      case Op::dict: {
        JinjaDict d;
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          JinjaValue key, v;
          WT_TRY(eval(*e.args[k], &key));
          if (key.kind != Kind::string) return jinja_error("a dict key that is not a string");
          WT_TRY(eval(*e.args[k + 1], &v));
          assign(&d, key.s, std::move(v));
        }
        *out = JinjaValue::of_dict(std::move(d));
        return Status::ok();
      }
      case Op::attr: return attribute(e, out);
      case Op::item: {
        JinjaValue obj, key;
        WT_TRY(eval(*e.args[0], &obj));
        WT_TRY(eval(*e.args[1], &key));
        return item(obj, key, *e.args[0], out);
      }
      case Op::slice: return slice(e, out);
      case Op::call: return call(e, out);
      case Op::filter: {
        JinjaValue x;
        JinjaArgs a;
        WT_TRY(eval(*e.args[0], &x));
        WT_TRY(eval_args(e, 1, &x, &a));
        return jinja_filter(e.name, x, a, out);
      }
      case Op::test: {
        JinjaValue x;
        JinjaArgs a;
        WT_TRY(eval(*e.args[0], &x));
        WT_TRY(eval_args(e, 1, &x, &a));
        bool r = false;
        WT_TRY(jinja_test(e.name, x, a, &r));
        *out = JinjaValue::boolean(r != e.negated);
        return Status::ok();
      }
      case Op::neg:
      case Op::pos: {
        JinjaValue x;
        WT_TRY(eval(*e.args[0], &x));
        if (!x.is_numeric()) return jinja_error("a sign before a value that is not a number");
        if (e.op == Op::pos) *out = x.kind == Kind::boolean ? JinjaValue::integer(x.b) : x;
        else if (x.kind == Kind::number) *out = JinjaValue::number(-x.f);
        else *out = JinjaValue::integer(-(x.kind == Kind::integer ? x.i : x.b));
        return Status::ok();
      }
      case Op::not_: {
        JinjaValue x;
        WT_TRY(eval(*e.args[0], &x));
        *out = JinjaValue::boolean(!jinja_truthy(x));
        return Status::ok();
      }
      case Op::and_:
      case Op::or_: {  // Python's: the operand that decided, not a bool
        WT_TRY(eval(*e.args[0], out));
        if (jinja_truthy(*out) == (e.op == Op::or_)) return Status::ok();
        return eval(*e.args[1], out);
      }
      case Op::binary: {
        JinjaValue a, b;
        WT_TRY(eval(*e.args[0], &a));
        WT_TRY(eval(*e.args[1], &b));
        return arithmetic(e.name, a, b, out);
      }
      case Op::compare: {
        JinjaValue a, b;
        WT_TRY(eval(*e.args[0], &a));
        bool r = true;
        for (size_t k = 0; k < e.ops.size() && r; ++k) {  // a < b < c: each pair, stopping at the first false
          WT_TRY(eval(*e.args[k + 1], &b));
          WT_TRY(compare(e.ops[k], a, b, &r));
          a = std::move(b);
        }
        *out = JinjaValue::boolean(r);
        return Status::ok();
      }
      case Op::cond: {
        JinjaValue c;
        WT_TRY(eval(*e.args[0], &c));
        if (jinja_truthy(c)) return eval(*e.args[1], out);
        if (e.args[2]) return eval(*e.args[2], out);
        *out = JinjaValue();
        return Status::ok();
      }
    }
    return jinja_error("an expression it cannot evaluate");
  }

  const JinjaProgram& prog_;
  const JinjaDict& globals_;
  const JinjaRenderOptions& opt_;
  std::vector<Frame> frames_;
  size_t barrier_ = 0;  // inside a macro: the index of its first frame
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  int depth_ = 0;    // macro calls
  int nesting_ = 0;  // eval and exec calls on the stack, through macros too
};

}  // namespace

Status jinja_render(const JinjaProgram& program, const JinjaDict& globals, const JinjaRenderOptions& options,
                    std::string* out) {
  out->clear();
  const Status s = Renderer(program, globals, options).run(out);
  if (!s) out->clear();  // nothing half-written
  return s;
}

}  // namespace wt
