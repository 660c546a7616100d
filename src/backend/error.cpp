// BackendError: every error of prepare and run that is about one node.
#include "tonnx/backend.h"

namespace tonnx::backend {

std::string node_label(const ir::Node& n) {
  std::string s = n.op_type();
  if (!n.domain().empty()) s = n.domain() + "::" + s;
  if (!n.name().empty())
    s += " node '" + n.name() + "'";
  else
    s += " node";
  return s;
}

BackendError::BackendError(const ir::Node& node, std::string message, int)
    : std::runtime_error(message),
      node_(&node),
      op_type_(node.op_type()),
      node_name_(node.name()) {}

BackendError::BackendError(const ir::Node& node, const std::string& what)
    : BackendError(node, node_label(node) + ": " + what, 0) {}

BackendError BackendError::failed(const ir::Node& node, const std::string& cause) {
  return BackendError(node, node_label(node) + " failed: " + cause, 0);
}

}  // namespace tonnx::backend
