// The decoder's weights from a Hugging Face checkpoint folder: config.json (+
// generation_config.json), the embeddings and norms read in place from the mapped safetensors
// files, and the linear layers planned, converted and handed over one at a time.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "convert/convert.h"
#include "io/checkpoint.h"
#include "model/decoder.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"

namespace qlinear {
namespace {

class CheckpointWeights final : public DecoderWeights {
 public:
  CheckpointWeights(Checkpoint checkpoint, ModelConfig config, std::string quantization)
      : checkpoint_(std::move(checkpoint)),
        config_(std::move(config)),
        quantization_(std::move(quantization)) {}

  const ModelConfig& config() const override { return config_; }
  std::string where() const override { return checkpoint_.dir(); }

  Result<ConstMatrixView> embeddings() override {
    QL_ASSIGN_OR_RETURN(const TensorRef embed, checkpoint_.get("model.embed_tokens.weight"));
    const ModelConfig& c = config_;
    if (embed.shape() != Shape{c.vocab, c.hidden}) {
      return make_error(ErrorCode::kMisconfigured,
                        "{} has shape {}; config.json \"vocab_size\" = {} and \"hidden_size\" = {} "
                        "need [{}, {}]",
                        embed.where(), shape_to_string(embed.shape()), c.vocab, c.hidden, c.vocab,
                        c.hidden);
    }
    if (embed.dtype() != DType::kF32 && embed.dtype() != DType::kBF16 &&
        embed.dtype() != DType::kF16) {
      return make_error(ErrorCode::kMisconfigured, "{} is {}; embeddings must be f32, bf16 or f16",
                        embed.where(), dtype_name(embed.dtype()));
    }
    embed_ = embed;
    return ConstMatrixView(embed.bytes().data(), embed.dtype(), c.vocab, c.hidden, c.hidden);
  }

  Result<Tensor> norm(const std::string& name, int64_t n) override {
    QL_ASSIGN_OR_RETURN(const TensorRef ref, checkpoint_.get(name));
    if (ref.shape() != Shape{n}) {
      return make_error(ErrorCode::kMisconfigured, "{} has shape {}; config.json needs [{}] ({})",
                        ref.where(), shape_to_string(ref.shape()), n,
                        name.ends_with("q_norm.weight") || name.ends_with("k_norm.weight")
                            ? "head_dim"
                            : "hidden_size");
    }
    if (ref.dtype() != DType::kF32 && ref.dtype() != DType::kBF16 && ref.dtype() != DType::kF16) {
      return make_error(ErrorCode::kMisconfigured,
                        "{} is {}; a norm weight must be f32, bf16 or f16", ref.where(),
                        dtype_name(ref.dtype()));
    }
    QL_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(DType::kF32, {1, n}));
    convert_to_f32(ref.bytes().data(), ref.dtype(), static_cast<std::size_t>(n),
                   t.data_as<float>());
    return t;
  }

  Status for_each_linear(
      const std::function<Status(const Canonical&, const std::string&)>& fn) override {
    QuantOptions quant;
    quant.quantization = quantization_;
    QL_ASSIGN_OR_RETURN(std::unique_ptr<QuantConfig> qconfig,
                        parse_quant_config(checkpoint_, quant));
    QL_ASSIGN_OR_RETURN(std::vector<LinearLayer> planned,
                        plan_linear_layers(checkpoint_, *qconfig));
    bool has_lm_head = false;
    for (const LinearLayer& layer : planned) {
      QL_ASSIGN_OR_RETURN(LoadedLayer loaded, load_layer(checkpoint_, layer));
      // The layer's source pages were read once into its canonical form; without this they
      // would stay resident until exit, and a model's peak RSS would be its file plus its
      // prepared weights (docs/runner.md "Memory").
      checkpoint_.release_pages();
      const std::string note =
          !layer.unfused_reason.empty() ? layer.unfused_reason : loaded.unfused_reason;
      for (const Canonical& part : loaded.parts) {
        has_lm_head = has_lm_head || part.name == "lm_head";
        QL_RETURN_IF_ERROR(fn(part, note));
      }
    }
    if (has_lm_head || !config_.tie_embeddings) return Status::ok_status();
    // Tied embeddings: the lm_head is the embedding table, dense in its stored dtype.
    if (!embed_) QL_RETURN_IF_ERROR(embeddings().status());
    Canonical tied;
    tied.name = "lm_head";
    DenseWeights d;
    d.K = config_.hidden;
    d.N = config_.vocab;
    d.dtype = embed_->dtype();
    const auto bytes = embed_->bytes();
    d.data.assign(bytes.begin(), bytes.end());
    tied.weights = std::move(d);
    tied.shard_sizes = {config_.vocab};
    return fn(tied, "tied to model.embed_tokens (tie_word_embeddings)");
  }

 private:
  Checkpoint checkpoint_;
  ModelConfig config_;
  std::string quantization_;
  std::optional<TensorRef> embed_;
};

}  // namespace

Result<std::unique_ptr<DecoderWeights>> checkpoint_weights(const std::string& dir,
                                                           const std::string& quantization) {
  QL_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::open(dir));
  QL_ASSIGN_OR_RETURN(const std::optional<nlohmann::json> generation_json,
                      read_optional_model_json(dir, "generation_config.json"));
  QL_ASSIGN_OR_RETURN(
      ModelConfig config,
      parse_model_config(checkpoint.config(), generation_json ? &*generation_json : nullptr, dir));
  return std::unique_ptr<DecoderWeights>(
      std::make_unique<CheckpointWeights>(std::move(checkpoint), std::move(config), quantization));
}

}  // namespace qlinear
