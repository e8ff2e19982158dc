//===- bench/memory.cpp - Small messages and memory growth -----------------===//
#include "memory.h"

#include "output.h"

#include <algorithm>

using namespace mlbridge;

namespace bench {

void smallAndMemory(const RunnerDef &D) {
  Peer *P = D.Model;
  const long N1 = Cfg.Quick ? 100 : 1000;
  const long N2 = Cfg.Quick ? 1000 : 100000;
  auto R = D.Make(1);
  // Allocated and touched before the first RSS reading, so the timings
  // themselves do not show up as growth.
  std::vector<double> T(size_t(N2), 0.0);
  long Rss1 = 0, PeerRss1 = 0, RssMid = 0, AnonMid = 0;
  bool OnnxLike = !D.SmallIsInt;
  std::vector<float> One = {0.25f};
  for (long I = 0; I < N2; ++I) {
    float F = (I % 2) ? 0.25f : -0.25f;
    double T0 = nowUs();
    if (OnnxLike) {
      One[0] = F;
      Status S = R->setFeature("x", One);
      Expected<float> Y = S.isOk() ? R->evaluate<float>() : Expected<float>(S);
      if (!Y)
        die(D.Name + " small: " + Y.status().toString());
    } else {
      Status S = R->setFeature("f", F);
      Expected<int64_t> Y =
          S.isOk() ? R->evaluate<int64_t>() : Expected<int64_t>(S);
      if (!Y || *Y != (F > 0))
        die(D.Name + " small: " +
            (Y ? std::string("wrong answer") : Y.status().toString()));
    }
    T[size_t(I)] = nowUs() - T0;
    if (I + 1 == (N1 + N2) / 2) {
      RssMid = rssKb();
      AnonMid = statusKb(0, "RssAnon");
    }
    if (I + 1 == N1) {
      Rss1 = rssKb();
      PeerRss1 = P ? P->rss() : 0;
    }
  }
  long Rss2 = rssKb(), PeerRss2 = P ? P->rss() : 0;
  // Anonymous memory (heap, stacks) is what a leak grows; file-backed pages
  // of the libraries also count in VmRSS when first touched.
  long AnonGrowth = statusKb(0, "RssAnon") - AnonMid;
  std::vector<double> Warm(T.begin() + std::min<long>(N1, long(T.size()) / 10),
                           T.end());
  Row S;
  S.Section = "small";
  S.Runner = D.Name;
  S.Serdes = D.Serdes;
  S.N = 1;
  S.MedianUs = median(Warm);
  S.P90Us = pct(Warm, 0.9);
  S.Extra = {{"calls", double(N2)}};
  add(S);
  Row M;
  M.Section = "memory";
  M.Runner = D.Name;
  M.Serdes = D.Serdes;
  M.N = N2;
  M.MedianUs = S.MedianUs;
  M.Extra = {{"calls_1", double(N1)},
             {"rss_kb_1", double(Rss1)},
             {"calls_2", double(N2)},
             {"rss_kb_2", double(Rss2)},
             {"growth_kb", double(Rss2 - Rss1)},
             // A leak grows in both halves; a one-off allocation does not.
             {"growth_2nd_half_kb", double(Rss2 - RssMid)},
             {"anon_growth_2nd_half_kb", double(AnonGrowth)}};
  if (P)
    M.Extra.push_back({"peer_growth_kb", double(PeerRss2 - PeerRss1)});
  add(M);
  say("  %-14s %-10s small: median %7.1f us p90 %7.1f us | RSS %ld KB after "
      "%ld, %ld KB after %ld calls (growth %+ld KB, %+ld KB in the 2nd "
      "half, of it anonymous %+ld KB%s)\n",
      D.Name.c_str(), D.Serdes.c_str(), S.MedianUs, S.P90Us, Rss1, N1, Rss2,
      N2, Rss2 - Rss1, Rss2 - RssMid, AnonGrowth,
      P ? (", peer " + std::to_string(PeerRss2 - PeerRss1) + " KB").c_str()
        : "");
}

} // namespace bench
