// Built against the installed package: a runner whose model is missing must
// report not-found quickly (and the program must link with -fno-exceptions).
#include <mlbridge/pipe_model_runner.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  mlbridge::PipeOptions Opts;
  Opts.OpenTimeout = std::chrono::milliseconds(200);
  auto Runner = mlbridge::PipeModelRunner::create(argv[1], {}, std::nullopt, Opts);
  if (!Runner)
    return 3;
  (*Runner)->setFeature("x", 1.5f);
  mlbridge::Expected<int> R = (*Runner)->evaluate<int>();
  if (R || R.status().code() != mlbridge::ErrorCode::NotFound)
    return 4;
  std::printf("consumer ok: %s\n", R.status().toString().c_str());
  return 0;
}
