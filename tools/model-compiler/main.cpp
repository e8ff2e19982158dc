//===- main.cpp - mlbridge-model-compiler: ONNX model -> C++ ---------------===//
//
//   mlbridge-model-compiler MODEL.onnx --name CLASS [--namespace NS]
//                           [--output-dir DIR] [--basename BASE]
//                           [--dim NAME=SIZE]... [--quiet]
//   mlbridge-model-compiler --list-ops
//
// Writes DIR/BASE.h and DIR/BASE.cpp (BASE defaults to CLASS). Exit status:
// 0 on success, 1 when the model cannot be compiled (the reason, naming the
// node, goes to stderr), 2 on a usage error.
//
//===----------------------------------------------------------------------===//
#include "model_compiler.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

const char *const kUsage =
    "usage: mlbridge-model-compiler MODEL.onnx --name CLASS [--namespace NS]\n"
    "                               [--output-dir DIR] [--basename BASE]\n"
    "                               [--dim NAME=SIZE]... [--quiet]\n"
    "       mlbridge-model-compiler --list-ops\n"
    "\n"
    "Compiles an ONNX model into C++17 (DIR/BASE.h and DIR/BASE.cpp) that\n"
    "needs only the standard library: weights become constant arrays, the\n"
    "graph straight-line loops. Symbolic input dimensions need --dim.\n";

int usage(const std::string &Error) {
  std::cerr << "mlbridge-model-compiler: " << Error << "\n" << kUsage;
  return 2;
}

bool writeIfChanged(const std::string &Path, const std::string &Text) {
  {
    std::ifstream In(Path, std::ios::binary);
    if (In) {
      std::ostringstream Old;
      Old << In.rdbuf();
      if (Old.str() == Text)
        return true; // keep the timestamp: no rebuild of dependents
    }
  }
  const std::string Tmp = Path + ".tmp";
  {
    std::ofstream Out(Tmp, std::ios::binary | std::ios::trunc);
    if (!Out)
      return false;
    Out << Text;
    if (!Out.flush())
      return false;
  }
  return std::rename(Tmp.c_str(), Path.c_str()) == 0;
}

} // namespace

int main(int Argc, char **Argv) {
  using namespace mlbridge::modelc;
  CompileOptions Opts;
  std::string ModelPath, OutDir = ".", Base;
  bool Quiet = false;
  for (int I = 1; I < Argc; ++I) {
    const std::string A = Argv[I];
    auto Next = [&](std::string &Dst) {
      if (I + 1 >= Argc)
        return false;
      Dst = Argv[++I];
      return true;
    };
    if (A == "--help" || A == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (A == "--list-ops") {
      for (const std::string &Op : supportedOperators())
        std::cout << Op << "\n";
      return 0;
    } else if (A == "--name") {
      if (!Next(Opts.ClassName))
        return usage("--name needs a value");
    } else if (A == "--namespace") {
      if (!Next(Opts.Namespace))
        return usage("--namespace needs a value");
    } else if (A == "--output-dir" || A == "-o") {
      if (!Next(OutDir))
        return usage(A + " needs a value");
    } else if (A == "--basename") {
      if (!Next(Base))
        return usage("--basename needs a value");
    } else if (A == "--dim") {
      std::string D;
      if (!Next(D))
        return usage("--dim needs NAME=SIZE");
      const size_t Eq = D.find('=');
      long long V = 0;
      char Extra = 0;
      if (Eq == std::string::npos || Eq == 0 ||
          std::sscanf(D.c_str() + Eq + 1, "%lld%c", &V, &Extra) != 1 || V <= 0)
        return usage("--dim needs NAME=SIZE with SIZE > 0, got '" + D + "'");
      Opts.DimValues[D.substr(0, Eq)] = V;
    } else if (A == "--quiet" || A == "-q") {
      Quiet = true;
    } else if (!A.empty() && A[0] == '-') {
      return usage("unknown option '" + A + "'");
    } else if (ModelPath.empty()) {
      ModelPath = A;
    } else {
      return usage("more than one model given");
    }
  }
  if (ModelPath.empty())
    return usage("no model given");
  if (Opts.ClassName.empty())
    return usage("--name is required");
  if (Base.empty())
    Base = Opts.ClassName;

  std::ifstream In(ModelPath, std::ios::binary);
  if (!In) {
    std::cerr << "mlbridge-model-compiler: error: cannot open '" << ModelPath
              << "': " << std::strerror(errno) << "\n";
    return 1;
  }
  std::ostringstream Buf;
  Buf << In.rdbuf();
  const size_t Slash = ModelPath.find_last_of('/');
  Opts.SourceName =
      Slash == std::string::npos ? ModelPath : ModelPath.substr(Slash + 1);
  Opts.HeaderInclude = Base + ".h";

  const CompileResult R = compileOnnxModel(Buf.str(), Opts);
  if (!R.Ok) {
    std::cerr << "mlbridge-model-compiler: error: " << ModelPath << ": "
              << R.Error << "\n";
    return 1;
  }
  const std::string H = OutDir + "/" + Base + ".h";
  const std::string S = OutDir + "/" + Base + ".cpp";
  if (!writeIfChanged(H, R.Header) || !writeIfChanged(S, R.Source)) {
    std::cerr << "mlbridge-model-compiler: error: cannot write " << H
              << " or " << S << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  if (!Quiet)
    std::cout << R.Summary << "  wrote " << H << " and " << S << "\n";
  return 0;
}
