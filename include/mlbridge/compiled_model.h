//===- mlbridge/compiled_model.h - What a compiled model exports -*- C++ -*-===//
//
// mlbridge-model-compiler turns an ONNX model into a C++ class (a header and
// a source file). This header is the only one the generated code includes,
// and it needs nothing but the C++ standard library (it includes
// mlbridge/embedded_model.h, the description every model linked into the
// program shares), so a generated model is self-contained: it links into a
// compiler without any runtime library.
//
// Every generated class `Foo` has
//
//   struct Foo::Workspace;                     // scratch for one call
//   static void Foo::run(<inputs...>, <outputs...>, Workspace &) noexcept;
//   static const mlbridge::EmbeddedModel &Foo::info() noexcept;
//
// run() is a pure function of its inputs: it reads only its input arrays
// and constant weights and writes only its output arrays and the
// workspace. Any number of threads may call it at once, each with its own
// Workspace. info() describes the model for CompiledModelRunner (see
// mlbridge/compiled_model_runner.h), which puts it behind the ModelRunner
// feature API: its instances (EmbeddedModel::Create) hold a Workspace and
// one buffer per input and output, and its Run calls run() on them.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_COMPILED_MODEL_H
#define MLBRIDGE_COMPILED_MODEL_H

#include "mlbridge/embedded_model.h"

#endif // MLBRIDGE_COMPILED_MODEL_H
