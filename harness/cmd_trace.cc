// `tide trace gen|info|validate`: RL step traces (docs/formats/trace.md).

#include <cmath>
#include <cstdio>
#include <memory>

#include "harness/command.h"
#include "harness/flag_check.h"
#include "traces/change_summary.h"
#include "traces/generator.h"
#include "traces/trace_file.h"

namespace tide::harness {

namespace {

struct TraceArgs {
  traces::GenerateOptions gen;
  std::string out;
  std::string file;
  bool exact = false;
  // Signed, so that a negative value is reported as given; /meta stores int64.
  int64_t tokensPerStep = static_cast<int64_t>(traces::GenerateOptions{}.routing.tokensPerStep);
};

// The reader refuses non-finite /meta values, so a file it could not read back
// is refused here, and so are settings that are finite but meaningless.
void checkTrainingSettings(const TraceArgs& a) {
  const traces::GenerateOptions& o = a.gen;
  if (!std::isfinite(o.rl.lr) || !(o.rl.lr > 0)) throw flagError("--lr", "finite and > 0", o.rl.lr);
  if (!std::isfinite(o.rl.weightDecay) || !(o.rl.weightDecay >= 0))
    throw flagError("--weight-decay", "finite and >= 0", o.rl.weightDecay);
  if (a.tokensPerStep <= 0) {
    throw StatusError(
        TIDE_ERROR(Code::kInvalidArgument,
                   "--tokens-per-step must be > 0 (got " + std::to_string(a.tokensPerStep) + ")"));
  }
}

void runGen(const TraceArgs& a) {
  traces::GenerateOptions o = a.gen;
  if (a.exact) o.samplePerTensor = 0;
  if (o.samplePerTensor == 0 && !a.exact) {
    throw StatusError(TIDE_ERROR(Code::kInvalidArgument, "--sample must be >= 1 (or use --exact)"));
  }
  checkTrainingSettings(a);
  o.routing.tokensPerStep = static_cast<uint64_t>(a.tokensPerStep);
  traces::GenerateReport rep;
  traces::TraceData d = orThrow(traces::generateTrace(o, &rep));
  orThrow(traces::writeTrace(a.out, d));
  std::printf(
      "wrote %s: %s scale %d, %d steps, %zu tensors, delta %s, %.2f s (%.3g element-steps)\n",
      a.out.c_str(), d.meta.model.c_str(), d.meta.scale, d.meta.steps, d.tensors.size(),
      rep.exact ? "exact" : ("sampled " + std::to_string(o.samplePerTensor) + "/tensor").c_str(),
      rep.seconds, static_cast<double>(rep.elementSteps));
  if (!rep.exact) {
    std::printf(
        "sample: %llu elements per tensor; worst-case 95 %% half-width %.2f %% per tensor "
        "and step (Wilson, at p = 1 %%: %.2f %%)\n",
        static_cast<unsigned long long>(o.samplePerTensor),
        100.0 * 0.98 / std::sqrt(static_cast<double>(o.samplePerTensor)),
        100.0 * workloads::wilsonHalfWidth95(0.01, static_cast<double>(o.samplePerTensor)));
  }
  std::fputs(traces::formatChangeSummary(traces::summarizeChanges(d)).c_str(), stdout);
}

}  // namespace

void addTraceCommand(CLI::App& app) {
  auto args = std::make_shared<TraceArgs>();
  auto* cmd = app.add_subcommand("trace", "Generate, inspect and validate RL step traces (HDF5)");
  cmd->require_subcommand(1);

  auto* gen = cmd->add_subcommand("gen", "Generate a trace: routing, per-tensor changes, rollout");
  gen->add_option("--model", args->gen.model, "zoo model name or TOML path")->capture_default_str();
  gen->add_option("--scale", args->gen.scale, "divide hidden dims by S")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  gen->add_option("--steps", args->gen.steps, "RL steps")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  gen->add_option("--seed", args->gen.seed, "seed of every random stream")->capture_default_str();
  gen->add_option("--out", args->out, "output .h5 file")->required();
  gen->add_option("--sample", args->gen.samplePerTensor,
                  "elements checked per tensor when not exact")
      ->capture_default_str();
  gen->add_flag("--exact", args->exact, "check every element (small models)");
  gen->add_flag("!--no-indices", args->gen.recordIndices,
                "exact runs: do not store the changed indices");
  gen->add_option("--exact-limit", args->gen.exactLimit,
                  "models with at most this many parameters are checked exactly")
      ->capture_default_str();
  gen->add_option("--threads", args->gen.threads, "worker threads (0 = all cores)")
      ->check(CLI::Range(0, 1024));
  gen->add_option("--lr", args->gen.rl.lr, "AdamW learning rate")->capture_default_str();
  gen->add_option("--weight-decay", args->gen.rl.weightDecay)->capture_default_str();
  gen->add_option("--tokens-per-step", args->tokensPerStep,
                  "tokens through each MoE layer per step")
      ->capture_default_str();
  gen->add_option("--zipf", args->gen.routing.zipf, "expert popularity skew (0 = uniform)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  gen->add_option("--samples", args->gen.rollout.samplesPerStep, "rollout samples per step")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  gen->add_option("--train-layout", args->gen.trainLayout, "e.g. tp=8,pp=8,cp=4,ep=32");
  gen->add_option("--infer-layout", args->gen.inferLayout, "e.g. engines=8,tp=32,ep=32,dp_attn=8");
  gen->callback([args] { runGen(*args); });

  auto* info = cmd->add_subcommand("info", "Summarize a trace file");
  info->add_option("file", args->file, "trace .h5")->required();
  info->callback([args] {
    traces::TraceData d = orThrow(traces::readTrace(args->file));
    std::fputs(traces::describeTrace(d).c_str(), stdout);
    std::fputs(traces::formatChangeSummary(traces::summarizeChanges(d)).c_str(), stdout);
  });

  auto* val = cmd->add_subcommand("validate", "Check a trace file against the schema");
  val->add_option("file", args->file, "trace .h5")->required();
  val->callback([args] {
    traces::TraceData d = orThrow(traces::readTrace(args->file));
    std::printf("%s: valid tide-trace v%lld (%d steps, %zu tensors, %zu events)\n",
                args->file.c_str(), static_cast<long long>(traces::kSchemaVersion), d.meta.steps,
                d.tensors.size(), d.events.size());
  });
}

}  // namespace tide::harness
