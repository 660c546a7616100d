// The profile's report (tonnx/backend.h, profile_report): totals per op type and per op type
// and output plane, then the slowest nodes with the path their kernel chose.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tonnx/backend.h"

namespace tonnx::backend {

std::string profile_report(const std::vector<NodeProfile>& prof) {
  std::ostringstream out;
  std::map<std::string, std::pair<double, int64_t>> by_type;
  double total = 0;
  int64_t runs = 0;
  for (const auto& p : prof) {
    runs = std::max(runs, p.calls);
    by_type[p.op_type].first += p.total_ms;
    by_type[p.op_type].second += 1;
    total += p.total_ms;
  }
  if (runs == 0) return {};
  std::vector<std::pair<double, std::string>> types;
  for (const auto& [t, v] : by_type) types.push_back({v.first, t});
  std::sort(types.rbegin(), types.rend());
  out << "profile: " << runs << " runs, " << total / runs << " ms per run in nodes\n";
  for (const auto& [ms, t] : types)
    out << "  " << t << " x" << by_type[t].second << ": " << ms / runs << " ms ("
        << 100 * ms / total << "%)\n";
  std::map<std::string, double> by_plane;
  for (const auto& p : prof) by_plane[p.op_type + " " + p.plane] += p.total_ms;
  std::vector<std::pair<double, std::string>> planes;
  for (const auto& [k, ms] : by_plane) planes.push_back({ms, k});
  std::sort(planes.rbegin(), planes.rend());
  out << "by output plane:\n";
  for (const auto& [ms, k] : planes) out << "  " << k << ": " << ms / runs << " ms\n";
  std::vector<const NodeProfile*> nodes;
  for (const auto& p : prof) nodes.push_back(&p);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->total_ms > b->total_ms; });
  out << "slowest nodes:\n";
  for (size_t i = 0; i < std::min<size_t>(10, nodes.size()); ++i)
    out << "  " << nodes[i]->node << ": " << nodes[i]->total_ms / runs << " ms"
        << (nodes[i]->kernel.empty() ? "" : " (" + nodes[i]->kernel + ")") << "\n";
  return out.str();
}

}  // namespace tonnx::backend
