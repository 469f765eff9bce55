#include "workers/request_builder.h"

#include "core/check.h"
#include "io/npy_tensor.h"
#include "workers/caption_features.h"

namespace vispec {

namespace {
// One caption's features as [L, caption_dim] float32. Planning checked the header; the array read here is
// judged again, so a file changed since is caught as well.
torch::Tensor read_features(const GptConfig& gpt, const std::string& path) {
  NpyArray array = read_npy(path);
  const std::string error = caption_features_error(gpt, path, array);
  VISPEC_CHECK(error.empty(), error);
  auto features = npy_to_tensor(std::move(array), path).reshape({-1, gpt.caption_dim}).to(torch::kFloat32);
  // A NaN here would reach every logit of the sample, and the watch would blame the GPT's weights.
  VISPEC_CHECK(torch::isfinite(features).all().item<bool>(), path, ": caption features not finite (NaN or infinity)");
  return features;
}
}  // namespace

RequestBuilder::RequestBuilder(const ModelConfig& model, uint64_t seed, torch::Device device)
    : gpt_(model.gpt), seed_(seed) {
  if (model.has_text_encoder) text_encoder_ = std::make_unique<TextEncoder>(model, device);
  text_encoder_source_ = model.text_encoder_weights.empty() ? model.text_encoder_dir : model.text_encoder_weights;
}

torch::Tensor RequestBuilder::caption_features(const PlannedSample& s) {
  if (!s.features.empty()) return read_features(gpt_, s.features);
  VISPEC_ASSERT(text_encoder_, "a caption without a text encoder passed planning");
  if (s.prompt != last_prompt_ || !last_features_.defined()) {
    last_features_ = text_encoder_->encode(s.prompt);
    VISPEC_CHECK(torch::isfinite(last_features_).all().item<bool>(), text_encoder_source_,
                 ": the text encoder's features are not finite (NaN or infinity): a NaN in its weights, or an "
                 "overflow in its dtype?");
    last_prompt_ = s.prompt;
  }
  return last_features_;
}

DecodeRequest RequestBuilder::operator()(const PlannedSample* first, int64_t count) {
  DecodeRequest req;
  req.seed = seed_;
  std::vector<int64_t> classes;
  std::vector<torch::Tensor> captions;
  std::vector<std::vector<int64_t>> prompts, null_prompts, drafter_prompts, drafter_null_prompts;
  for (int64_t i = 0; i < count; ++i) {
    req.sample_ids.push_back(first[i].sample_id);
    if (gpt_.prompted()) {
      prompts.push_back(first[i].prompt_ids), null_prompts.push_back(first[i].null_prompt_ids);
      drafter_prompts.push_back(first[i].drafter_prompt_ids);
      drafter_null_prompts.push_back(first[i].drafter_null_prompt_ids);
    } else if (gpt_.text_conditional()) captions.push_back(caption_features(first[i]));
    else classes.push_back(first[i].class_id);
  }
  req.conditions = gpt_.prompted()           ? prompt_conditions(prompts, null_prompts, gpt_.cls_token_num)
                   : gpt_.text_conditional() ? caption_conditions(captions, gpt_.cls_token_num)
                                             : class_conditions(classes);
  if (count > 0 && !first[0].drafter_prompt_ids.empty())
    req.drafter_conditions = prompt_conditions(drafter_prompts, drafter_null_prompts, gpt_.cls_token_num);
  return req;
}

}  // namespace vispec
