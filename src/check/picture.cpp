// Pictures of a graph (tonnx/check.h): DOT, and SVG through Graphviz's library.
#include <graphviz/gvc.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "check/format.h"
#include "tonnx/check.h"

namespace tonnx {
namespace {

constexpr size_t kMaxScopeDepth = 64;
// SVG layout grows faster than linearly: past this many boxes, draw with a depth.
constexpr int kMaxSvgBoxes = 5000;

// Labels and names longer than this are cut with an ellipsis: a hostile model's 100 MB node
// name would otherwise keep Graphviz laying out one box for minutes.
constexpr size_t kMaxLabelBytes = 160;

// `s` cut to `max` bytes (at a UTF-8 character's start) with "...".
std::string cut(const std::string& s, size_t max = kMaxLabelBytes) {
  if (s.size() <= max) return s;
  size_t n = max - 3;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

// A DOT double-quoted string's contents: at most 16 lines, each cut to kMaxLabelBytes.
std::string esc(const std::string& text) {
  std::string s;
  int lines = 0;
  for (size_t at = 0; at <= text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (++lines > 16) {
      s += "...";
      break;
    }
    s += cut(text.substr(at, std::min(end - at, kMaxLabelBytes + 1)));
    if (end < text.size()) s += '\n';
    at = end + 1;
  }
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    // Other control bytes (a NUL would end the DOT text for Graphviz's reader) as '?'.
    out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  }
  return out;
}

std::vector<std::string> scope_of(const onnx::NodeProto& n) {
  const std::string& doc = n.doc_string();
  std::vector<std::string> parts;
  if (doc.rfind("scope: ", 0) != 0) return parts;
  std::string s =
      doc.substr(7, doc.find('\n') == std::string::npos ? std::string::npos : doc.find('\n') - 7);
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, '/');)
    if (!p.empty()) parts.push_back(p);
  // Clusters nest as deep as scopes: a hostile doc_string must not nest them without end.
  if (parts.size() > kMaxScopeDepth) parts.resize(kMaxScopeDepth);
  return parts;
}

// The statements of one cluster (a module scope) and its child clusters, in first-seen order.
struct Cluster {
  std::string label;
  std::vector<std::string> lines;
  std::vector<std::string> order;
  std::map<std::string, std::unique_ptr<Cluster>> children;
  Cluster& child(const std::string& name) {
    auto& c = children[name];
    if (!c) {
      c = std::make_unique<Cluster>();
      c->label = name;
      order.push_back(name);
    }
    return *c;
  }
};

class DotWriter {
 public:
  explicit DotWriter(const PictureOptions& o) : o_(o) {}

  std::string write(const onnx::GraphProto& g) {
    Cluster root;
    std::map<std::string, std::string> producers;
    graph(g, root, producers, /*top=*/true);
    std::ostringstream os;
    os << "digraph \"" << esc(g.name()) << "\" {\n"
       << "  rankdir=TB;\n  newrank=true;\n"
       << "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#dbe9f6\", "
          "fontname=\"Helvetica\", fontsize=10];\n"
       << "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    emit(root, os, "  ", /*is_root=*/true);
    for (const std::string& e : edges_) os << "  " << e << "\n";
    os << "}\n";
    return os.str();
  }

 private:
  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }

 public:
  int boxes() const { return counter_; }  // an upper bound on the nodes drawn

 private:
  void type_table(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) types_[v.name()] = detail::type_str(v.type());
    for (const auto& v : g.value_info()) types_[v.name()] = detail::type_str(v.type());
    for (const auto& v : g.output()) types_[v.name()] = detail::type_str(v.type());
    for (const auto& t : g.initializer()) types_[t.name()] = detail::tensor_type_str(t);
  }
  std::string type_of(const std::string& v) const {
    auto it = types_.find(v);
    return it == types_.end() ? "" : it->second;
  }

  void edge(const std::string& from, const std::string& to, const std::string& label,
            const std::string& extra = "") {
    if (from == to || !seen_edges_.insert(from + "->" + to + "|" + label).second) return;
    std::string attrs = label.empty() ? "" : "label=\"" + esc(label) + "\"";
    if (!extra.empty()) attrs += (attrs.empty() ? "" : ", ") + extra;
    edges_.push_back(from + " -> " + to + (attrs.empty() ? "" : " [" + attrs + "]") + ";");
  }

  static std::string node_label(const onnx::NodeProto& n, const std::string& base_dir) {
    std::string label = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx") label = n.domain() + "::" + label;
    int shown = 0;
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
        continue;
      if (++shown > 6) {
        label += "\n...";
        break;
      }
      std::string v = detail::attr_str(a, base_dir);
      if (v.size() > 40) v = v.substr(0, 37) + "...";
      label += "\n" + a.name() + "=" + v;
    }
    return label;
  }

  // Draws `g` into `cluster`; `producers` maps a value name to the DOT node that makes it
  // (the outer graph's, for a body).
  void graph(const onnx::GraphProto& g, Cluster& cluster,
             std::map<std::string, std::string>& producers, bool top) {
    type_table(g);
    std::set<std::string> inits;
    for (const auto& t : g.initializer()) inits.insert(t.name());
    for (const auto& v : g.input()) {
      if (inits.count(v.name())) continue;
      std::string id = fresh("in");
      cluster.lines.push_back(id + " [shape=ellipse, fillcolor=\"#d5f5d5\", label=\"" +
                              esc(v.name() + "\n" + type_of(v.name())) + "\"];");
      producers[v.name()] = id;
    }
    if (o_.initializers)
      for (const auto& t : g.initializer()) {
        std::string id = fresh("w");
        cluster.lines.push_back(id +
                                " [shape=box, style=filled, fillcolor=\"#f3f3f3\", "
                                "fontsize=7, height=0.2, label=\"" +
                                esc(t.name() + "\n" + detail::tensor_type_str(t)) + "\"];");
        producers[t.name()] = id;
      }
    // Collapsed scopes (depth): one box per scope prefix, labelled with its op counts.
    std::map<std::string, std::string> collapsed_ids;
    std::map<std::string, std::map<std::string, int>> collapsed_ops;
    std::map<std::string, std::vector<std::string>> collapsed_path;
    for (const auto& n : g.node()) {
      std::vector<std::string> scope = top ? scope_of(n) : std::vector<std::string>{};
      bool collapse = top && o_.depth > 0 && static_cast<int>(scope.size()) > o_.depth;
      std::string id;
      if (collapse) {
        std::vector<std::string> prefix(scope.begin(), scope.begin() + o_.depth);
        std::string key;
        for (const auto& p : prefix) key += "/" + p;
        auto it = collapsed_ids.find(key);
        if (it == collapsed_ids.end()) {
          it = collapsed_ids.emplace(key, fresh("s")).first;
          collapsed_path[key] = prefix;
        }
        id = it->second;
        ++collapsed_ops[key][n.op_type()];
      } else {
        id = fresh("n");
        Cluster* c = &cluster;
        for (const auto& p : scope) c = &c->child(p);
        std::string tooltip = n.name().empty() ? "" : ", tooltip=\"" + esc(n.name()) + "\"";
        c->lines.push_back(id + " [label=\"" + esc(node_label(n, o_.base_dir)) + "\"" + tooltip +
                           "];");
      }
      for (const auto& in : n.input()) {
        auto p = producers.find(in);
        if (in.empty() || p == producers.end()) continue;
        edge(p->second, id, inits.count(in) ? "" : type_of(in));
      }
      for (const auto& out : n.output())
        if (!out.empty()) producers[out] = id;
      if (collapse) continue;
      for (const auto& a : n.attribute()) {
        std::vector<const onnx::GraphProto*> bodies;
        if (a.type() == onnx::AttributeProto::GRAPH) bodies.push_back(&a.g());
        for (const auto& b : a.graphs()) bodies.push_back(&b);
        for (const onnx::GraphProto* body : bodies)
          subgraph(n, a.name(), *body, id, cluster, producers);
      }
    }
    for (const auto& [key, id] : collapsed_ids) {
      const auto& path = collapsed_path[key];
      // Inside its scope's cluster (which names it, and holds the scope's own ops if any).
      Cluster* c = &cluster;
      for (const auto& p : path) c = &c->child(p);
      int total = 0;
      std::string ops;
      for (const auto& [op, count] : collapsed_ops[key]) {
        total += count;
        ops += "\n" + op + " x" + std::to_string(count);
      }
      c->lines.push_back(id + " [fillcolor=\"#eeeeee\", label=\"" +
                         esc(std::to_string(total) + " ops" + ops) + "\"];");
    }
    for (const auto& v : g.output()) {
      std::string id = fresh("out");
      cluster.lines.push_back(id + " [shape=ellipse, fillcolor=\"#fde2c4\", label=\"" +
                              esc(v.name() + "\n" + type_of(v.name())) + "\"];");
      auto p = producers.find(v.name());
      if (p != producers.end()) edge(p->second, id, "");
    }
  }

  // A body of If/Loop/Scan: a cluster beside its node, fed by the node's outer values, its
  // outputs flowing back into the node.
  void subgraph(const onnx::NodeProto& n, const std::string& attr, const onnx::GraphProto& body,
                const std::string& node_id, Cluster& parent,
                const std::map<std::string, std::string>& outer) {
    Cluster& c = parent.child("#" + std::to_string(counter_++));
    c.label = n.op_type() + " '" + n.name() + "': " + attr;
    std::map<std::string, std::string> producers = outer;
    graph(body, c, producers, false);
    for (const auto& v : body.output()) {
      auto p = producers.find(v.name());
      if (p != producers.end()) edge(p->second, node_id, "", "style=dashed, constraint=false");
    }
  }

  void emit(const Cluster& c, std::ostringstream& os, const std::string& indent, bool is_root) {
    std::string in = indent;
    if (!is_root) {
      os << indent << "subgraph \"cluster_" << clusters_++ << "\" {\n"
         << indent << "  label=\"" << esc(c.label) << "\"; style=\"rounded,dashed\"; "
         << "color=\"#888888\"; fontname=\"Helvetica\"; fontsize=9;\n";
      in += "  ";
    }
    for (const auto& l : c.lines) os << in << l << "\n";
    for (const auto& name : c.order) emit(*c.children.at(name), os, in, false);
    if (!is_root) os << indent << "}\n";
  }

  const PictureOptions& o_;
  int counter_ = 0, clusters_ = 0;
  std::map<std::string, std::string> types_;
  std::vector<std::string> edges_;
  std::set<std::string> seen_edges_;
};

void check_options(const PictureOptions& o) {
  if (o.depth < 0)
    throw std::invalid_argument("picture depth " + std::to_string(o.depth) +
                                " is negative; give 0 (every scope) or more");
}

}  // namespace

std::string graph_dot(const onnx::ModelProto& m, const PictureOptions& o) {
  check_options(o);
  return DotWriter(o).write(m.graph());
}

std::string graph_svg(const onnx::ModelProto& m, const PictureOptions& o) {
  check_options(o);
  DotWriter w(o);
  std::string dot = w.write(m.graph());
  if (w.boxes() > kMaxSvgBoxes)
    throw std::invalid_argument(
        "the picture would have about " + std::to_string(w.boxes()) + " boxes, more than " +
        std::to_string(kMaxSvgBoxes) +
        " that Graphviz lays out in reasonable time: collapse module scopes with a depth "
        "(--depth 2), leave the weights out (--no-initializers), or write DOT (--format dot)");
  // One Graphviz context for the process, never freed: Graphviz 2.42 frees its font-size cache
  // with a context and reads it again from the next one (a use after free under ASan).
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  static GVC_t* gvc = gvContext();
  if (!gvc) throw std::runtime_error("Graphviz: cannot create a context");
  struct Free {
    GVC_t* gvc;
    Agraph_t* g = nullptr;
    char* data = nullptr;
    bool laid_out = false;
    ~Free() {
      if (data) gvFreeRenderData(data);
      if (g && laid_out) gvFreeLayout(gvc, g);
      if (g) agclose(g);
    }
  } f{gvc};
  f.g = agmemread(dot.c_str());
  if (!f.g) throw std::runtime_error("Graphviz could not read the graph's DOT");
  if (gvLayout(gvc, f.g, "dot") != 0)
    throw std::runtime_error("Graphviz could not lay the graph out (is its dot plugin installed?)");
  f.laid_out = true;
  unsigned int len = 0;
  if (gvRenderData(gvc, f.g, "svg", &f.data, &len) != 0 || !f.data)
    throw std::runtime_error("Graphviz could not render SVG");
  return std::string(f.data, len);
}

}  // namespace tonnx
