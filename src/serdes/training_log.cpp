//===- serdes/training_log.cpp - LLVM training-log writer ------------------===//
//
// The format is LLVM's (docs/protocol.md, "Training logs"); the header and
// context lines are the bitstream SerDes' encodings, so both stay byte-equal
// to LLVM's JSON (compact, keys in LLVM's order).
//
//===----------------------------------------------------------------------===//
#include "mlbridge/training_log.h"

#include "support/json.h"
#include "support/utf8.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mlbridge {

namespace {

// Bytes kept in memory before they are written out.
constexpr size_t kFlushThreshold = size_t(1) << 20;

bool isLLVMLogType(DType T) { return T != DType::Bool && T != DType::String; }

Status checkSpec(const TensorSpec &S, const char *What) {
  if (Status V = S.validate(size_t(1) << 40); !V.isOk())
    return V.addContext(std::string(What) + " spec");
  if (S.isDynamic())
    return Status(ErrorCode::InvalidArgument,
                  std::string(What) + " " + S.describe() +
                      ": a training log needs concrete shapes");
  if (!isLLVMLogType(S.type()))
    return Status(ErrorCode::InvalidArgument,
                  std::string(What) + " " + S.describe() +
                      ": LLVM's training logs have no " +
                      std::string(dtypeName(S.type())) +
                      " type (use uint8_t for flags)");
  if (!support::isValidUtf8(S.name()))
    return Status(ErrorCode::InvalidArgument,
                  std::string(What) + " name is not valid UTF-8");
  return Status::ok();
}

Status checkValue(const TensorSpec &Want, DType Type, size_t ByteCount,
                  const char *What) {
  if (Type != Want.type() || ByteCount != Want.byteSize())
    return Status(ErrorCode::TypeMismatch,
                  std::string(What) + " '" + Want.name() + "': got " +
                      std::to_string(ByteCount) + " bytes of " +
                      std::string(dtypeName(Type)) + ", the log declares " +
                      Want.describe() + " (" + std::to_string(Want.byteSize()) +
                      " bytes)");
  return Status::ok();
}

} // namespace

// Where the bytes go: a file we own, or the caller's sink.
struct TrainingLogWriter::Output {
  std::string Path;
  std::FILE *File = nullptr;
  ByteSink Sink;

  Status write(std::string_view Bytes) {
    if (Sink)
      return Sink(Bytes);
    if (!Bytes.empty() && std::fwrite(Bytes.data(), 1, Bytes.size(), File) != Bytes.size())
      return Status(ErrorCode::IOError,
                    "writing " + Path + ": " + std::strerror(errno));
    if (std::fflush(File) != 0)
      return Status(ErrorCode::IOError,
                    "writing " + Path + ": " + std::strerror(errno));
    return Status::ok();
  }
  Status close() {
    if (!File)
      return Status::ok();
    const int Rc = std::fclose(File);
    File = nullptr;
    if (Rc != 0)
      return Status(ErrorCode::IOError,
                    "closing " + Path + ": " + std::strerror(errno));
    return Status::ok();
  }
  ~Output() { (void)close(); }
};

TrainingLogWriter::TrainingLogWriter(std::unique_ptr<Output> Out,
                                     std::vector<TensorSpec> Features,
                                     TrainingLogOptions Options, bool LogsAdvice)
    : Out(std::move(Out)), Features(std::move(Features)),
      Options(std::move(Options)), LogsAdvice(LogsAdvice) {}

TrainingLogWriter::~TrainingLogWriter() { (void)close(); }

Expected<std::unique_ptr<TrainingLogWriter>>
TrainingLogWriter::make(std::unique_ptr<Output> Out,
                        std::vector<TensorSpec> Features,
                        TrainingLogOptions Options, bool LogsAdvice) {
  std::unique_ptr<TrainingLogWriter> W(new TrainingLogWriter(
      std::move(Out), std::move(Features), std::move(Options), LogsAdvice));
  std::string &B = W->Buffer;
  B += "{\"features\":[";
  for (size_t I = 0; I < W->Features.size(); ++I) {
    if (I)
      B.push_back(',');
    W->Features[I].appendJson(B);
  }
  B += "]";
  // LLVM's Logger writes "score" before "advice".
  if (W->Options.Score) {
    B += ",\"score\":";
    W->Options.Score->appendJson(B);
  }
  if (W->Options.Advice) {
    B += ",\"advice\":";
    W->Options.Advice->appendJson(B);
  }
  B += "}\n";
  W->Committed = B.size();
  if (Status S = W->flush(); !S.isOk())
    return S;
  return W;
}

static Status checkSpecs(const std::vector<TensorSpec> &Features,
                         const TrainingLogOptions &Options) {
  if (Features.empty())
    return Status(ErrorCode::InvalidArgument,
                  "a training log needs at least one feature");
  std::unordered_map<std::string_view, size_t> Seen;
  for (const TensorSpec &S : Features) {
    if (Status C = checkSpec(S, "feature"); !C.isOk())
      return C;
    if (!Seen.emplace(S.name(), 0).second)
      return Status(ErrorCode::InvalidArgument,
                    "duplicate feature name '" + S.name() + "'");
  }
  if (Options.Score)
    if (Status C = checkSpec(*Options.Score, "score"); !C.isOk())
      return C;
  if (Options.Advice)
    if (Status C = checkSpec(*Options.Advice, "advice"); !C.isOk())
      return C;
  return Status::ok();
}

Expected<std::unique_ptr<TrainingLogWriter>>
TrainingLogWriter::create(const std::string &Path,
                          std::vector<TensorSpec> Features,
                          TrainingLogOptions Options) {
  if (Status S = checkSpecs(Features, Options); !S.isOk())
    return S;
  auto Out = std::make_unique<Output>();
  Out->Path = Path;
  // "e": O_CLOEXEC, so a compiler's child processes never inherit the log.
  Out->File = std::fopen(Path.c_str(), "wbe");
  if (!Out->File)
    return Status(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::IOError,
                  "cannot create training log " + Path + ": " +
                      std::strerror(errno));
  return make(std::move(Out), std::move(Features), std::move(Options), false);
}

Expected<std::unique_ptr<TrainingLogWriter>>
TrainingLogWriter::create(ByteSink Sink, std::vector<TensorSpec> Features,
                          TrainingLogOptions Options) {
  if (!Sink)
    return Status(ErrorCode::InvalidArgument, "empty training-log sink");
  if (Status S = checkSpecs(Features, Options); !S.isOk())
    return S;
  auto Out = std::make_unique<Output>();
  Out->Sink = std::move(Sink);
  return make(std::move(Out), std::move(Features), std::move(Options), false);
}

Expected<std::unique_ptr<TrainingLogWriter>>
TrainingLogWriter::createForRunner(const std::string &Path,
                                   const ModelRunner &Runner, bool LogAdvice,
                                   TrainingLogOptions Options) {
  std::vector<TensorSpec> Specs;
  for (size_t I = 0; I < Runner.featureCount(); ++I)
    Specs.push_back(Runner.featureSpec(I));
  if (LogAdvice) {
    if (!Runner.adviceSpec())
      return Status(ErrorCode::InvalidArgument,
                    "logging the advice needs the runner's advice spec "
                    "(ModelRunner::setAdviceSpec)");
    Specs.push_back(*Runner.adviceSpec());
  }
  Expected<std::unique_ptr<TrainingLogWriter>> W =
      create(Path, std::move(Specs), std::move(Options));
  if (W)
    (*W)->LogsAdvice = LogAdvice;
  return W;
}

Status TrainingLogWriter::fail(Status S) {
  if (Sticky.isOk())
    Sticky = S;
  return S;
}

Status TrainingLogWriter::usable() const {
  if (!Sticky.isOk())
    return Sticky;
  if (Closed)
    return Status(ErrorCode::InvalidArgument, "the training log is closed");
  return Status::ok();
}

Status TrainingLogWriter::switchContext(std::string_view Name) {
  if (Status S = usable(); !S.isOk())
    return S;
  if (ScorePending)
    return fail(Status(ErrorCode::InvalidArgument,
                       "switchContext: the last observation has no score yet"));
  if (!support::isValidUtf8(Name))
    return fail(Status(ErrorCode::InvalidArgument,
                       "context name is not valid UTF-8"));
  Buffer += "{\"context\":";
  json::appendQuoted(Buffer, Name);
  Buffer += "}\n";
  Committed = Buffer.size();
  Context.assign(Name.data(), Name.size());
  return maybeFlush();
}

int64_t TrainingLogWriter::observationsInContext() const {
  auto It = NextIndex.find(Context);
  return It == NextIndex.end() ? 0 : It->second;
}

Status TrainingLogWriter::startObservation(
    const std::vector<std::pair<DType, size_t>> &Shapes) {
  if (Status S = usable(); !S.isOk())
    return S;
  if (ScorePending)
    return fail(Status(ErrorCode::InvalidArgument,
                       "logObservation: the last observation has no score yet "
                       "(logScore)"));
  if (Shapes.size() != Features.size())
    return fail(Status(ErrorCode::InvalidArgument,
                       "logObservation: " + std::to_string(Shapes.size()) +
                           " values for " + std::to_string(Features.size()) +
                           " features"));
  for (size_t I = 0; I < Shapes.size(); ++I)
    if (Status C = checkValue(Features[I], Shapes[I].first, Shapes[I].second,
                              "feature");
        !C.isOk())
      return fail(C);
  const int64_t Index = NextIndex[Context]++;
  Buffer += "{\"observation\":";
  json::appendInteger(Buffer, Index);
  Buffer += "}\n";
  return Status::ok();
}

Status TrainingLogWriter::endObservation() {
  Buffer.push_back('\n');
  if (Options.Score) {
    // Held back until its outcome is logged: the log never ends with an
    // observation that lacks its score.
    ScorePending = true;
    return Status::ok();
  }
  Committed = Buffer.size();
  return maybeFlush();
}

Status TrainingLogWriter::logObservation(
    const std::vector<const TensorValue *> &Values) {
  std::vector<std::pair<DType, size_t>> Shapes;
  Shapes.reserve(Values.size());
  for (const TensorValue *V : Values) {
    if (!V)
      return fail(Status(ErrorCode::InvalidArgument,
                         "logObservation: null tensor"));
    Shapes.emplace_back(V->type(), V->byteSize());
  }
  if (Status S = startObservation(Shapes); !S.isOk())
    return S;
  for (const TensorValue *V : Values)
    Buffer.append(static_cast<const char *>(V->data()), V->byteSize());
  return endObservation();
}

Status TrainingLogWriter::logRunner(const ModelRunner &Runner) {
  const size_t N = Runner.featureCount();
  std::vector<const TensorValue *> Values;
  Values.reserve(N + 1);
  for (size_t I = 0; I < N; ++I)
    Values.push_back(&Runner.feature(I));
  if (LogsAdvice)
    Values.push_back(&Runner.advice());
  for (size_t I = 0; I < Values.size() && I < Features.size(); ++I)
    if (Values[I]->spec().name() != Features[I].name())
      return fail(Status(ErrorCode::InvalidArgument,
                         "logRunner: the runner's tensor " + std::to_string(I) +
                             " is '" + Values[I]->spec().name() +
                             "', the log's is '" + Features[I].name() + "'"));
  return logObservation(Values);
}

Status TrainingLogWriter::logScoreValues(DType Type, const void *Data,
                                         size_t ByteCount) {
  if (Status S = usable(); !S.isOk())
    return S;
  if (!Options.Score)
    return fail(Status(ErrorCode::InvalidArgument,
                       "logScore: the log was created without a score spec"));
  const TensorSpec &Score = *Options.Score;
  // A scalar fills the whole score tensor.
  if (Type == Score.type() && ByteCount == dtypeSize(Type) &&
      Score.elementCount() > 1) {
    std::string Filled;
    for (size_t I = 0; I < Score.elementCount(); ++I)
      Filled.append(static_cast<const char *>(Data), ByteCount);
    return logScoreValues(Type, Filled.data(), Filled.size());
  }
  if (!ScorePending)
    return fail(Status(ErrorCode::InvalidArgument,
                       "logScore: no observation is waiting for its score"));
  if (Status C = checkValue(Score, Type, ByteCount, "score"); !C.isOk())
    return fail(C);
  Buffer += "{\"outcome\":";
  json::appendInteger(Buffer, NextIndex[Context] - 1);
  Buffer += "}\n";
  Buffer.append(static_cast<const char *>(Data), ByteCount);
  Buffer.push_back('\n');
  ScorePending = false;
  Committed = Buffer.size();
  return maybeFlush();
}

Status TrainingLogWriter::logScoreBytes(const void *Data, size_t ByteCount) {
  if (!Options.Score)
    return logScoreValues(DType::Float, Data, ByteCount); // reports the error
  if (!Data && ByteCount)
    return fail(Status(ErrorCode::InvalidArgument, "logScoreBytes: null data"));
  return logScoreValues(Options.Score->type(), Data, ByteCount);
}

Status TrainingLogWriter::maybeFlush() {
  return Committed >= kFlushThreshold ? writeCommitted() : Status::ok();
}

// Complete records are written even after a caller error made the writer
// refuse more; only a failed output stops them.
Status TrainingLogWriter::writeCommitted() {
  if (OutputFailed)
    return Sticky;
  if (Committed == 0)
    return Status::ok();
  if (Status S = Out->write(std::string_view(Buffer.data(), Committed));
      !S.isOk()) {
    OutputFailed = true;
    return fail(S);
  }
  Buffer.erase(0, Committed);
  Committed = 0;
  return Status::ok();
}

Status TrainingLogWriter::flush() {
  Status W = writeCommitted();
  return Sticky.isOk() ? W : Sticky;
}

Status TrainingLogWriter::close() {
  if (Closed)
    return Sticky;
  Closed = true;
  if (ScorePending)
    (void)fail(Status(ErrorCode::InvalidArgument,
                      "close: the last observation has no score; it was not "
                      "written"));
  (void)writeCommitted();
  if (Status C = Out->close(); !C.isOk())
    (void)fail(C);
  return Sticky;
}

} // namespace mlbridge
