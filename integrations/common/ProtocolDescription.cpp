//===- ProtocolDescription.cpp - A plugin's protocol as JSON --------------===//
//
// ProtocolDescription.h says what the object holds.
//
//===----------------------------------------------------------------------===//
#include "ProtocolDescription.h"

#include "mlbridge/json_escape.h"

namespace mlbridge::integrations {

void addListItem(std::vector<ProtocolList> &Lists, const char *List, const char *Item) {
  if (Lists.empty() || Lists.back().Name != List)
    Lists.push_back({List, {}});
  Lists.back().Items.push_back(Item);
}

std::string describeProtocol(const std::vector<TensorSpec> &Features,
                             const std::vector<TensorSpec> &OptionalFeatures,
                             const TensorSpec &Advice,
                             const std::vector<ProtocolList> &Lists,
                             const std::string &Extra) {
  auto Specs = [](std::string &J, const std::vector<TensorSpec> &V) {
    J += "[";
    for (size_t I = 0; I < V.size(); ++I) {
      J += I ? "," : "";
      V[I].appendJson(J);
    }
    J += "]";
  };
  std::string J = "{\"features\":";
  Specs(J, Features);
  J += ",\"optional_features\":";
  Specs(J, OptionalFeatures);
  J += ",\"advice\":";
  Advice.appendJson(J);
  J += ",\"lists\":{";
  for (size_t L = 0; L < Lists.size(); ++L) {
    J += std::string(L ? "," : "") + "\"" + jsonEscape(Lists[L].Name) + "\":[";
    for (size_t I = 0; I < Lists[L].Items.size(); ++I)
      J += std::string(I ? "," : "") + "\"" + jsonEscape(Lists[L].Items[I]) + "\"";
    J += "]";
  }
  return J + "}" + Extra + "}";
}

} // namespace mlbridge::integrations
