// mlbridge-tf-eval MODEL: evaluates a TF-AOT model of the build on inputs
// read from stdin and prints every output (tests/e2e/test_tf_aot.py compares
// them with TensorFlow in Python). Format, per case:
//   case / input NAME TYPE DIMS VALUES... / end      (stdin)
//   case / output NAME TYPE DIMS VALUES... / end     (stdout)
// Exit status 1 with a message on stderr for any error.
#include "tf_models_registry.h"

#include "mlbridge/tf_model_runner.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

using namespace mlbridge;

namespace {

int fail(const std::string &Msg) {
  std::fprintf(stderr, "mlbridge-tf-eval: %s\n", Msg.c_str());
  return 1;
}

template <typename T> Status setAs(TfModelRunner &R, const std::string &Name,
                                   std::istringstream &L) {
  std::vector<T> V;
  for (double X; L >> X;)
    V.push_back(static_cast<T>(X));
  return R.setFeature(Name, V);
}

void print(const TensorValue &V) {
  std::printf("output %s %s ", V.spec().name().c_str(),
              std::string(dtypeName(V.type())).c_str());
  const auto &Shape = V.spec().shape();
  for (size_t I = 0; I < Shape.size(); ++I)
    std::printf("%s%lld", I ? "," : "", static_cast<long long>(Shape[I]));
  for (size_t I = 0; I < V.elementCount(); ++I) {
    switch (V.type()) {
    case DType::Float: std::printf(" %.9g", double(V.dataAs<float>()[I])); break;
    case DType::Double: std::printf(" %.17g", V.dataAs<double>()[I]); break;
    case DType::Int64: std::printf(" %lld", static_cast<long long>(V.dataAs<int64_t>()[I])); break;
    case DType::Int32: std::printf(" %d", V.dataAs<int32_t>()[I]); break;
    default: std::printf(" ?"); break;
    }
  }
  std::printf("\n");
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 2)
    return fail("usage: mlbridge-tf-eval MODEL");
  const EmbeddedModel *M = tftest::findModel(Argv[1]);
  if (!M)
    return fail(std::string("no model '") + Argv[1] + "' in this build");
  auto R = TfModelRunner::create(*M);
  if (!R)
    return fail(R.status().toString());
  std::string Line;
  while (std::getline(std::cin, Line)) {
    std::istringstream L(Line);
    std::string Kind, Name, Type, Dims;
    L >> Kind;
    if (Kind == "input") {
      L >> Name >> Type >> Dims;
      Status S;
      if (Type == "float") S = setAs<float>(**R, Name, L);
      else if (Type == "double") S = setAs<double>(**R, Name, L);
      else if (Type == "int64_t") S = setAs<int64_t>(**R, Name, L);
      else if (Type == "int32_t") S = setAs<int32_t>(**R, Name, L);
      else S = Status(ErrorCode::InvalidArgument, "type " + Type);
      if (!S.isOk())
        return fail(S.toString());
    } else if (Kind == "end") {
      if (Status S = (*R)->evaluateRaw(); !S.isOk())
        return fail(S.toString());
      std::printf("case\n");
      for (size_t I = 0; I < (*R)->outputCount(); ++I) {
        const TensorValue *V = (*R)->output(I);
        if (!V)
          return fail("no output " + std::to_string(I));
        print(*V);
      }
      std::printf("end\n");
    }
  }
  return 0;
}
