#include "launcher/config/values.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "launcher/config/accelerate_args.h"
#include "launcher/config/diagnostics.h"

namespace accel::launcher {

bool ParseBool(absl::string_view text, bool* out) {
  text = absl::StripAsciiWhitespace(text);
  for (absl::string_view word : {"true", "yes", "on", "1", "y"}) {
    if (absl::EqualsIgnoreCase(text, word)) {
      *out = true;
      return true;
    }
  }
  for (absl::string_view word : {"false", "no", "off", "0", "n"}) {
    if (absl::EqualsIgnoreCase(text, word)) {
      *out = false;
      return true;
    }
  }
  return false;
}

YamlValue ScalarValue(absl::string_view text) {
  YamlValue value;
  value.kind = YamlValue::Kind::kScalar;
  value.scalar = std::string(text);
  return value;
}

namespace values {
namespace {

using Kind = YamlValue::Kind;

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(message); }

bool AllOff(const YamlValue& v) {
  if (v.empty()) return true;
  if (v.kind != Kind::kMap) return false;
  for (const auto& [key, value] : v.entries) {
    bool flag = true;
    if (!value.empty() &&
        !(value.kind == Kind::kScalar && ParseBool(value.scalar, &flag) && !flag)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Describe(const YamlValue& v) {
  switch (v.kind) {
    case Kind::kNull:
      return "nothing";
    case Kind::kScalar:
      return absl::StrCat("'", v.scalar, "'");
    case Kind::kSequence:
      return "a list";
    case Kind::kMap:
      return "a mapping";
  }
  return "nothing";
}

absl::Status SetBool(const YamlValue& v, bool* out) {
  if (v.kind == Kind::kScalar && ParseBool(v.scalar, out)) return absl::OkStatus();
  return Invalid(absl::StrCat("expected true or false, got ", Describe(v)));
}

absl::Status SetInt(const YamlValue& v, int* out) {
  int n = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtoi(absl::StripAsciiWhitespace(v.scalar), &n)) {
    *out = n;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected an integer, got ", Describe(v)));
}

absl::Status SetFraction(const YamlValue& v, double* out) {
  double x = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtod(absl::StripAsciiWhitespace(v.scalar), &x) &&
      x > 0 && x <= 1) {
    *out = x;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a fraction above 0 and at most 1, got ", Describe(v)));
}

absl::Status SetPositive(const YamlValue& v, double* out) {
  double x = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtod(absl::StripAsciiWhitespace(v.scalar), &x) &&
      x > 0 && x < 1e9) {
    *out = x;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a number above 0, got ", Describe(v)));
}

absl::Status SetSeconds(const YamlValue& v, double* out) {
  double seconds = 0;
  if (v.kind == Kind::kScalar && absl::SimpleAtod(absl::StripAsciiWhitespace(v.scalar), &seconds) &&
      seconds >= 0 && seconds < 1e9) {
    *out = seconds;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a number of seconds >= 0, got ", Describe(v)));
}

absl::Status SetString(const YamlValue& v, std::string* out) {
  if (v.kind == Kind::kNull) {
    out->clear();
    return absl::OkStatus();
  }
  if (v.kind == Kind::kScalar) {
    *out = v.scalar;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("expected a single value, got ", Describe(v)));
}

// Reads "0,1,3", a single integer or a YAML list of integers.
absl::Status ParseIntList(const YamlValue& v, std::vector<int>* out) {
  std::vector<std::string> words;
  if (v.kind == Kind::kScalar) {
    words = absl::StrSplit(v.scalar, ',', absl::SkipWhitespace());
  } else if (v.kind == Kind::kSequence) {
    for (const YamlValue& item : v.items) {
      if (item.kind != Kind::kScalar) return Invalid("expected a list of integers");
      words.push_back(item.scalar);
    }
  } else if (v.kind != Kind::kNull) {
    return Invalid(absl::StrCat("expected a list of integers like 0,1, got ", Describe(v)));
  }
  out->clear();
  for (const std::string& word : words) {
    int n = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(word), &n) || n < 0) {
      return Invalid(absl::StrCat("expected a list of integers >= 0 like 0,1, got '", word, "'"));
    }
    out->push_back(n);
  }
  return absl::OkStatus();
}

absl::Status SetGpuIds(const YamlValue& v, Config* c) {
  if (v.kind == Kind::kNull ||
      (v.kind == Kind::kScalar &&
       absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(v.scalar), "all"))) {
    c->gpu_ids = "all";
    return absl::OkStatus();
  }
  std::vector<int> ids;
  absl::Status status = ParseIntList(v, &ids);
  if (!status.ok() || ids.empty()) {
    return Invalid(absl::StrCat("expected 'all' or GPU indices like 0,1, got ", Describe(v)));
  }
  c->gpu_ids = absl::StrJoin(ids, ",");
  return absl::OkStatus();
}

absl::Status SetDistributedType(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (ParseDistributedType(text, &c->distributed_type)) {
    c->accelerate_plugin.clear();
    return absl::OkStatus();
  }
  // accelerate's plugins run on the GPUs of a multi-GPU launch, driven by the workers' variables.
  if (ParseAcceleratePlugin(text, &c->accelerate_plugin)) {
    c->distributed_type = DistributedType::kMultiGpu;
    return absl::OkStatus();
  }
  static const std::vector<absl::string_view> kUnsupported = {
      "TPU", "XLA", "MULTI_NPU", "MULTI_XPU", "MULTI_MLU", "MULTI_HPU", "MULTI_MUSA", "MULTI_SDAA"};
  for (absl::string_view name : kUnsupported) {
    if (absl::EqualsIgnoreCase(text, name)) {
      return Invalid(absl::StrCat("distributed_type ", name,
                                  " is not supported by accel-launch (supported: NO, MULTI_GPU, "
                                  "MULTI_CPU, and FSDP, DEEPSPEED, MEGATRON_LM for Python "
                                  "scripts)"));
    }
  }
  return Invalid(
      WithSuggestion(absl::StrCat("expected NO, MULTI_GPU or MULTI_CPU, got ", Describe(v)), text,
                     {"NO", "MULTI_GPU", "MULTI_CPU"}));
}

absl::Status SetMixedPrecision(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (ParseMixedPrecision(text, &c->mixed_precision)) {
    c->fp8 = false;
    return absl::OkStatus();
  }
  if (absl::EqualsIgnoreCase(text, "fp8")) {  // Python scripts only: ACCELERATE_MIXED_PRECISION
    c->mixed_precision = MixedPrecision::kNo;
    c->fp8 = true;
    return absl::OkStatus();
  }
  return Invalid(WithSuggestion(absl::StrCat("expected no, fp16 or bf16, got ", Describe(v)), text,
                                {"no", "fp16", "bf16"}));
}

absl::Status SetComputeEnvironment(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (text == "LOCAL_MACHINE") {
    c->compute_environment = text;
    return absl::OkStatus();
  }
  if (text == "AMAZON_SAGEMAKER") {
    return Invalid(
        "compute_environment AMAZON_SAGEMAKER is not supported by accel-launch "
        "(supported: LOCAL_MACHINE)");
  }
  return Invalid(WithSuggestion(absl::StrCat("expected LOCAL_MACHINE, got ", Describe(v)), text,
                                {"LOCAL_MACHINE"}));
}

absl::Status SetRdzvBackend(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (text == "static" || text == "c10d" || text == "etcd" || text == "etcd-v2") {
    c->rdzv_backend = text;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("rdzv_backend ", Describe(v),
                              " is not supported (accel-launch runs its own rendezvous: static "
                              "for a fixed set of machines, c10d, etcd or etcd-v2 for elastic "
                              "membership)"));
}

absl::Status SetLogMode(const YamlValue& v, Config* c) {
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  if (text == "private" || text == "group") {
    c->log_mode = text;
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("log_mode ", Describe(v), " is not one of private, group"));
}

absl::Status SetRanksFilter(const YamlValue& v, Config* c) {
  return ParseIntList(v, &c->ranks_filter);
}

// An accelerate sub-config we cannot honour: fine when absent or empty.
absl::Status Section(const YamlValue& v, absl::string_view what, bool* present) {
  *present = !v.empty();
  if (v.kind != Kind::kNull && v.kind != Kind::kMap && !v.empty()) {
    return Invalid(absl::StrCat("expected a mapping, got ", Describe(v)));
  }
  if (v.empty()) return absl::OkStatus();
  return Invalid(absl::StrCat(what,
                              " is not supported by accel-launch; remove this section or leave it "
                              "empty ({})"));
}

absl::Status SetOtherSection(const YamlValue& v, absl::string_view what) {
  bool present = false;
  return Section(v, what, &present);
}

absl::Status SetDynamoBackend(const YamlValue& v, Config* c) {
  // accelerate's DynamoBackend values (TORHCHXLA_TRACE_ONCE and IPEX: older releases' names).
  static const std::vector<absl::string_view> kBackends = {"NO",
                                                           "EAGER",
                                                           "AOT_EAGER",
                                                           "INDUCTOR",
                                                           "AOT_TS_NVFUSER",
                                                           "NVPRIMS_NVFUSER",
                                                           "CUDAGRAPHS",
                                                           "OFI",
                                                           "FX2TRT",
                                                           "ONNXRT",
                                                           "TENSORRT",
                                                           "AOT_TORCHXLA_TRACE_ONCE",
                                                           "TORCHXLA_TRACE_ONCE",
                                                           "TORHCHXLA_TRACE_ONCE",
                                                           "TVM",
                                                           "HPU_BACKEND",
                                                           "IPEX"};
  bool off = false;
  const std::string text =
      v.kind == Kind::kScalar ? absl::AsciiStrToUpper(absl::StripAsciiWhitespace(v.scalar)) : "";
  if (v.kind == Kind::kScalar && !v.quoted && ParseBool(text, &off) && !off) {
    c->dynamo_backend = "NO";  // YAML's unquoted NO / no / false
    return absl::OkStatus();
  }
  for (absl::string_view backend : kBackends) {
    if (text == backend) {
      c->dynamo_backend = text;
      return absl::OkStatus();
    }
  }
  return Invalid(WithSuggestion(
      absl::StrCat("expected a torch dynamo backend (NO, INDUCTOR, EAGER, AOT_EAGER, CUDAGRAPHS, "
                   "...), got ",
                   Describe(v)),
      text, kBackends));
}

absl::Status SetDynamoMode(const YamlValue& v, Config* c) {
  static const std::vector<absl::string_view> kModes = {"default", "reduce-overhead",
                                                        "max-autotune"};
  const std::string text = v.kind == Kind::kScalar ? v.scalar : "";
  for (absl::string_view mode : kModes) {
    if (text == mode) {
      c->dynamo_mode = text;
      return absl::OkStatus();
    }
  }
  return Invalid(WithSuggestion(
      absl::StrCat("expected default, reduce-overhead or max-autotune, got ", Describe(v)), text,
      kModes));
}

absl::Status SetDynamo(const YamlValue& v, Config* c) {
  if (v.empty()) return absl::OkStatus();
  if (v.kind != Kind::kMap) return Invalid(absl::StrCat("expected a mapping, got ", Describe(v)));
  for (const auto& [key, value] : v.entries) {
    if (value.kind == Kind::kNull) continue;  // unset, as everywhere
    const std::string name = key.kind == Kind::kScalar ? key.scalar : "";
    absl::Status status;
    if (name == "dynamo_backend") {
      status = SetDynamoBackend(value, c);
    } else if (name == "dynamo_mode") {
      status = SetDynamoMode(value, c);
    } else if (name == "dynamo_use_fullgraph") {
      status = SetBool(value, &c->dynamo_use_fullgraph);
    } else if (name == "dynamo_use_dynamic") {
      status = SetBool(value, &c->dynamo_use_dynamic);
    } else if (name == "dynamo_use_regional_compilation") {
      status = SetBool(value, &c->dynamo_use_regional_compilation);
    } else {
      return Invalid(WithSuggestion(absl::StrCat("unknown dynamo_config key '", name, "'"), name,
                                    {"dynamo_backend", "dynamo_mode", "dynamo_use_fullgraph",
                                     "dynamo_use_dynamic", "dynamo_use_regional_compilation"}));
    }
    if (!status.ok()) return Invalid(absl::StrCat(name, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status SetIpex(const YamlValue& v, Config* /*c*/) {
  if (AllOff(v)) return absl::OkStatus();
  return Invalid("IPEX (ipex_config) is not supported by accel-launch; remove this section");
}

// A switch we cannot honour: fine when absent or off (false / no / NO).
absl::Status SetOff(const YamlValue& v, absl::string_view what) {
  bool on = false;
  if (v.empty() || (v.kind == Kind::kScalar && ParseBool(v.scalar, &on) && !on)) {
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat(what, " is not supported by accel-launch; remove it or set it off"));
}

absl::Status SetLegacyFp16(const YamlValue& v, Config* c) {
  bool fp16 = false;
  absl::Status status = SetBool(v, &fp16);
  if (status.ok() && fp16) c->mixed_precision = MixedPrecision::kFp16;
  return status;
}

}  // namespace values
}  // namespace accel::launcher
