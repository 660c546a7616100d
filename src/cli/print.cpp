// tonnx print: a model's graph as text, Graphviz's DOT or an SVG picture.
#include <iostream>

#include "cli/args.h"
#include "cli/commands.h"
#include "tonnx/check.h"
#include "tonnx/proto.h"

namespace tonnx::cli {
namespace {

const char kPrintHelp[] = R"(usage: tonnx print M.onnx [--format text|dot|svg] [-o FILE] [--depth N]

Prints the graph. text (default): inputs and initializers with their types, one node a line
with attributes (constants with their first values) and module scope. dot: Graphviz's
language; svg: the picture, laid out and rendered by Graphviz. In pictures each node is a
box with its op and key attributes, edges carry the values' types, inputs and outputs are
ellipses, initializers small boxes, module scopes and If/Loop bodies clusters.

options:
  --format text|dot|svg   what to print (default text)
  -o, --output FILE       write it to FILE (atomically) instead of standard output
  --depth N               pictures: draw module scopes N levels deep and collapse what is
                          deeper into one box per scope, with its op counts (default: all)
  --no-initializers       pictures: leave the weights out
)";

int run_print(const Args& a) {
  if (a.positional.size() != 1) throw UsageError("expected one .onnx file");
  std::string format = a.get("--format").value_or("text");
  if (format != "text" && format != "dot" && format != "svg")
    throw UsageError("--format " + format + " is not text, dot or svg");
  PictureOptions po;
  po.depth = static_cast<int>(
      a.integer("--depth", 0, 1000, "give 0 (every scope) to 1000").value_or(po.depth));
  if (format == "text" && (a.has("--depth") || a.has("--no-initializers")))
    throw UsageError("--depth and --no-initializers are for --format dot or svg");
  onnx::ModelProto m = read_model_proto(a.positional[0]);
  po.base_dir = folder_of(a.positional[0]);
  try {
    infer_shapes_strict(m);  // for the inferred types; printing works without them
  } catch (const CheckError&) {
  }
  std::string text = format == "dot"   ? graph_dot(m, po)
                     : format == "svg" ? graph_svg(m, po)
                                       : printable_graph(m, po.base_dir);
  auto out = a.output();
  if (out)
    write_file_atomic(*out, text);
  else
    std::cout << text;
  return 0;
}

}  // namespace

const Command kPrintCommand{
    "print", kPrintHelp,
    Spec{{"--format", "-o", "--output", "--depth"}, {"--no-initializers"}, {}, {}}, run_print};

}  // namespace tonnx::cli
