//===- ProtocolDescription.h - A plugin's protocol as JSON ------*- C++ -*-===//
//
// What every in-tree plugin prints with its describe option (the LLVM
// plugins' -<prefix>-describe, the MLIR pass's describe=): its protocol as
// one JSON object, which the Python side builds too (from the problem's
// .def file, or its feature list) so a test can compare both:
//   {"features":[spec,...],"optional_features":[spec,...],"advice":spec,
//    "lists":{"<List>":["name",...]}<Extra>}
// with each spec in TensorSpec's JSON form, in the order sent (optional
// features follow the others when an option asks for them). Extra: more
// members of the object, each preceded by a comma, or empty.
//
// Compiled into each integration from source; the mlbridge library only.
//
//===----------------------------------------------------------------------===//
#ifndef MLBRIDGE_INTEGRATIONS_COMMON_PROTOCOLDESCRIPTION_H
#define MLBRIDGE_INTEGRATIONS_COMMON_PROTOCOLDESCRIPTION_H

#include "mlbridge/tensor_spec.h"

#include <string>
#include <vector>

namespace mlbridge::integrations {

/// One named list of the protocol (agents, actions, feature columns).
struct ProtocolList {
  std::string Name;
  std::vector<std::string> Items;
};

/// Appends Item to the list named List, starting that list when the last
/// one has another name: the .def files give each list's items in a row,
///   #define MLB_LIST(List, E, Name) mlp::addListItem(Lists, #List, #Name);
void addListItem(std::vector<ProtocolList> &Lists, const char *List, const char *Item);

/// The JSON object above.
std::string describeProtocol(const std::vector<TensorSpec> &Features,
                             const std::vector<TensorSpec> &OptionalFeatures,
                             const TensorSpec &Advice,
                             const std::vector<ProtocolList> &Lists,
                             const std::string &Extra = "");

} // namespace mlbridge::integrations

#endif // MLBRIDGE_INTEGRATIONS_COMMON_PROTOCOLDESCRIPTION_H
