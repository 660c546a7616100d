// The symbolic registry: built-ins (registered at static-init time beside their code) and
// user registrations (at run time), kept apart; lookup by name and opset.
#include <algorithm>
#include <map>
#include <mutex>

#include "tonnx/symbolic.h"

namespace tonnx {
namespace {

struct Table {
  // name -> since_opset -> fn
  std::map<std::string, std::map<int, SymbolicFn>> builtin, user;
  std::mutex mu;
};

Table& table() {
  static Table t;
  return t;
}

const SymbolicFn* lookup(const std::map<std::string, std::map<int, SymbolicFn>>& m,
                         const std::string& name, int opset) {
  auto it = m.find(name);
  if (it == m.end()) return nullptr;
  auto v = it->second.upper_bound(opset);
  if (v == it->second.begin()) return nullptr;
  --v;
  return &v->second;
}

}  // namespace

namespace detail {
void record_emitted(const std::string& aten_kind, int opset, const std::string& onnx_op);
bool register_builtin(const std::string& qualname, int since_opset, SymbolicFn inner) {
  // An invocation is recorded too (op ""), so symbolics that emit nothing (identities such
  // as dropout in eval) count as exercised.
  SymbolicFn fn = [inner](SymbolicContext& g) -> Outputs {
    record_emitted(g.kind(), g.opset(), "");
    return inner(g);
  };
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, inserted] = t.builtin[qualname].emplace(since_opset, std::move(fn));
  if (!inserted)
    throw std::logic_error("tonnx: two built-in symbolics for " + qualname + " since opset " +
                           std::to_string(since_opset));
  (void)it;
  return true;
}
}  // namespace detail

void register_symbolic_fn(const std::string& qualname, int since_opset, SymbolicFn fn) {
  if (qualname.find("::") == std::string::npos)
    throw std::invalid_argument("register_symbolic: '" + qualname +
                                "' is not a qualified op name such as aten::elu");
  if (since_opset < 1)
    throw std::invalid_argument("register_symbolic: opset " + std::to_string(since_opset) +
                                " for " + qualname + " must be >= 1");
  if (!fn) throw std::invalid_argument("register_symbolic: empty function for " + qualname);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.user[qualname][since_opset] = std::move(fn);
}

bool unregister_symbolic(const std::string& qualname, int since_opset) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.user.find(qualname);
  if (it == t.user.end()) return false;
  bool removed = false;
  if (since_opset < 0) {
    removed = !it->second.empty();
    t.user.erase(it);
  } else {
    removed = it->second.erase(since_opset) > 0;
    if (it->second.empty()) t.user.erase(it);
  }
  return removed;
}

std::vector<SymbolicInfo> registered_symbolics() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<SymbolicInfo> out;
  for (const auto& [name, m] : t.builtin)
    for (const auto& [since, fn] : m) out.push_back({name, since, false});
  for (const auto& [name, m] : t.user)
    for (const auto& [since, fn] : m) out.push_back({name, since, true});
  std::sort(out.begin(), out.end(), [](const SymbolicInfo& a, const SymbolicInfo& b) {
    return std::tie(a.name, a.since_opset, a.user) < std::tie(b.name, b.since_opset, b.user);
  });
  return out;
}

const SymbolicFn* find_symbolic(const std::string& qualname, int opset) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (const SymbolicFn* f = lookup(t.user, qualname, opset)) return f;
  return lookup(t.builtin, qualname, opset);
}

std::string serving_symbolic_name(const std::string& qualname, int opset) {
  bool in_place = qualname.size() > 1 && qualname.back() == '_' &&
                  qualname[qualname.size() - 2] != '_';  // relu_, not __and__
  if (!in_place || find_symbolic(qualname, opset)) return qualname;
  return qualname.substr(0, qualname.size() - 1);
}

int next_opset_with_symbolic(const std::string& qualname, int opset) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  int best = -1;
  for (auto* m : {&t.user, &t.builtin}) {
    auto it = m->find(qualname);
    if (it == m->end()) continue;
    auto v = it->second.upper_bound(opset);
    if (v != it->second.end() && (best < 0 || v->first < best)) best = v->first;
  }
  return best;
}

}  // namespace tonnx
