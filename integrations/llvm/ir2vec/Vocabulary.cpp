//===- Vocabulary.cpp - IR2Vec seed vocabulary ----------------------------===//
#include "Vocabulary.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mlbridge::ir2vec {

namespace {

std::string_view trim(std::string_view S) {
  while (!S.empty() && (S.front() == ' ' || S.front() == '\t'))
    S.remove_prefix(1);
  while (!S.empty() && (S.back() == ' ' || S.back() == '\t' || S.back() == '\r'))
    S.remove_suffix(1);
  return S;
}

Status lineError(const std::string &Name, size_t Line, const std::string &What) {
  return Status(ErrorCode::Malformed, "IR2Vec vocabulary '" + Name + "' line " +
                                          std::to_string(Line) + ": " + What);
}

} // namespace

Expected<Vocabulary> Vocabulary::load(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return Status(ErrorCode::NotFound,
                  "IR2Vec vocabulary '" + Path + "' cannot be opened (" +
                      std::strerror(errno) +
                      "); scripts/deps/ir2vec.sh installs it in .deps/ir2vec/");
  std::ostringstream Text;
  Text << In.rdbuf();
  if (In.bad())
    return Status(ErrorCode::IOError, "IR2Vec vocabulary '" + Path + "': read error");
  return parse(Text.str(), Path);
}

Expected<Vocabulary> Vocabulary::parse(std::string_view Text, const std::string &Name) {
  Vocabulary V;
  size_t LineNo = 0;
  while (!Text.empty()) {
    ++LineNo;
    size_t End = Text.find('\n');
    std::string_view Line = trim(Text.substr(0, End));
    Text.remove_prefix(End == std::string_view::npos ? Text.size() : End + 1);
    if (!Line.empty() && Line.back() == ',') // every entry but the last ends with ','
      Line = trim(Line.substr(0, Line.size() - 1));
    if (Line.empty())
      continue;
    size_t Colon = Line.find(':');
    if (Colon == 0 || Colon == std::string_view::npos)
      return lineError(Name, LineNo, "expected 'name:[v1, v2, ...]'");
    std::string Key(trim(Line.substr(0, Colon)));
    std::string_view Rest = trim(Line.substr(Colon + 1));
    if (Rest.size() < 2 || Rest.front() != '[' || Rest.back() != ']')
      return lineError(Name, LineNo, "truncated: '" + Key + "' has no '[...]' list");
    Rest = Rest.substr(1, Rest.size() - 2);
    Vector Values;
    while (true) {
      size_t Comma = Rest.find(',');
      std::string_view Item = trim(Rest.substr(0, Comma));
      double D = 0;
      auto [Ptr, Ec] = std::from_chars(Item.data(), Item.data() + Item.size(), D);
      const std::string Which =
          "value " + std::to_string(Values.size() + 1) + " of '" + Key + "' ";
      const bool Whole = !Item.empty() && Ptr == Item.data() + Item.size();
      if (Whole && Ec == std::errc::result_out_of_range)
        return lineError(Name, LineNo, Which + "is out of a double's range ('" +
                                           std::string(Item) + "')");
      if (!Whole || Ec != std::errc())
        return lineError(Name, LineNo,
                         Which + "is not a number ('" + std::string(Item) + "')");
      // from_chars reads "inf" and "nan": vectors made of them are not numbers.
      if (!std::isfinite(D))
        return lineError(Name, LineNo,
                         Which + "is not finite ('" + std::string(Item) + "')");
      Values.push_back(D);
      if (Comma == std::string_view::npos)
        break;
      Rest.remove_prefix(Comma + 1);
    }
    if (V.Dim == 0)
      V.Dim = static_cast<unsigned>(Values.size());
    else if (Values.size() != V.Dim)
      return lineError(Name, LineNo, "'" + Key + "' has " + std::to_string(Values.size()) +
                                         " values, expected " + std::to_string(V.Dim) +
                                         " (the dimension of the first entry)");
    if (!V.Entries.emplace(Key, std::move(Values)).second)
      return lineError(Name, LineNo, "'" + Key + "' appears twice");
  }
  if (V.Entries.empty())
    return Status(ErrorCode::Malformed, "IR2Vec vocabulary '" + Name + "' has no entries");
  return V;
}

const Vector *Vocabulary::find(std::string_view Name) const {
  auto It = Entries.find(Name);
  return It == Entries.end() ? nullptr : &It->second;
}

bool allFinite(const Vector &V) {
  for (double X : V)
    if (!std::isfinite(X))
      return false;
  return true;
}

void appendJsonVector(std::string &Out, const Vector &V) {
  Out += '[';
  char Buf[32];
  for (size_t I = 0; I < V.size(); ++I) {
    if (I)
      Out += ',';
    // Callers check finiteness (allFinite): JSON has no inf or nan.
    auto Res = std::to_chars(Buf, Buf + sizeof Buf, V[I]);
    Out.append(Buf, Res.ptr);
  }
  Out += ']';
}

} // namespace mlbridge::ir2vec
