// Checking and printing ONNX models: libonnx's checker and shape inference, and a readable
// graph in the style of torch.onnx's verbose output.
#pragma once

#include <onnx/onnx_pb.h>

#include <stdexcept>
#include <string>

namespace tonnx {

class CheckError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs onnx::checker::check_model, then strict shape inference (type checks on, node errors
// thrown). Inferred types are added to m.graph().value_info(). Throws CheckError.
void check_model(onnx::ModelProto& m, bool infer_shapes = true);
// The same for a file: external data is resolved in the model's folder under tonnx's rules
// (contained, regular files, sizes checked) before libonnx's checker sees the model.
// libonnx 1.12 knows ai.onnx opsets up to kLibonnxMaxOpset: a model importing a later one is
// refused with a CheckError that says so (its checker would judge such a model by older
// schemas); tonnx::backend::validate judges those (`tonnx check` does).
void check_model_file(const std::string& path);
inline constexpr int kLibonnxMaxOpset = 17;
// Strict shape inference alone (no checker, no external data read); throws CheckError.
void infer_shapes_strict(onnx::ModelProto& m);
// While alive, libonnx's operator schemas are being built on another thread (started once
// per process; a later scope finds them built). Each check runs in a child process, which
// otherwise builds them anew every time (about 7 ms); an export holds one while it traces,
// so the two overlap. A check waits for that thread before it forks, and the scope's end
// waits for it too (also when an export fails): a process that exits while libonnx builds
// crashes in its static destructors.
class OnnxSchemasLoading {
 public:
  OnnxSchemasLoading();
  ~OnnxSchemasLoading();
  OnnxSchemasLoading(const OnnxSchemasLoading&) = delete;
  OnnxSchemasLoading& operator=(const OnnxSchemasLoading&) = delete;
};

// Pictures of the graph (`tonnx print --format dot|svg`): one box per node with its op and
// key attributes, edges labelled with the types of the values they carry (where the model
// has them: run infer_shapes_strict first), graph inputs and outputs as ellipses,
// initializers as small boxes, If/Loop/Scan bodies and module scopes as clusters.
struct PictureOptions {
  // Module scope levels drawn (AlexNet/Sequential[features] is 2); the nodes of a deeper
  // scope collapse into one box per scope at that depth, labelled with its op counts. 0: all.
  int depth = 0;
  bool initializers = true;  // draw initializers (weights) as small boxes
  // The model's folder, where constants held as external data are read (as printable_graph).
  std::string base_dir;
};
// DOT, Graphviz's language.
std::string graph_dot(const onnx::ModelProto& m, const PictureOptions& o = {});
// The DOT laid out by Graphviz (dot) and rendered as SVG with its library (libgvc).
std::string graph_svg(const onnx::ModelProto& m, const PictureOptions& o = {});

// The graph, one node a line: %17 : Float(10, 64, 55, 55) = onnx::Conv[...](%x, %w), scope: ...
// Constants held as external data are read from base_dir, the model's folder
// (folder_of(path)), under the backend's rules; without one they are named, not read.
std::string printable_graph(const onnx::ModelProto& m, const std::string& base_dir = {});

}  // namespace tonnx
