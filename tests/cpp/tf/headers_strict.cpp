// The TF-AOT runner's public header needs neither TensorFlow nor exceptions
// or RTTI (checked with -fno-exceptions -fno-rtti -Wpedantic -Werror).
#include "mlbridge/tf_model_runner.h"

int main() { return sizeof(mlbridge::EmbeddedModel) > 0 ? 0 : 1; }
