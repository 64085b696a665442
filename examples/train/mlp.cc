#include "mlp.h"

#include <cmath>

namespace train {
namespace {

// Views of one parameter vector, in MlpShape's order.
struct Layers {
  std::span<const float> w2, b2, w1, b1;
  Layers(const MlpShape& s, std::span<const float> p)
      : w2(p.subspan(0, static_cast<size_t>(s.hidden))),
        b2(p.subspan(static_cast<size_t>(s.hidden), 1)),
        w1(p.subspan(s.outputLayerSize(), static_cast<size_t>(s.hidden) * static_cast<size_t>(s.inputs))),
        b1(p.subspan(s.outputLayerSize() + w1.size(), static_cast<size_t>(s.hidden))) {}
};

}  // namespace

std::vector<float> initialParameters(const MlpShape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> p(shape.parameterCount(), 0.0f);
  const auto fill = [&rng](float* first, size_t n, int fanIn) {
    std::uniform_real_distribution<float> d(-1.0f / std::sqrt(static_cast<float>(fanIn)),
                                            1.0f / std::sqrt(static_cast<float>(fanIn)));
    for (size_t i = 0; i < n; ++i) first[i] = d(rng);
  };
  fill(p.data(), static_cast<size_t>(shape.hidden), shape.hidden);  // w2
  fill(p.data() + shape.outputLayerSize(), static_cast<size_t>(shape.hidden) * static_cast<size_t>(shape.inputs),
       shape.inputs);  // w1
  return p;
}

Batch makeBatch(const MlpShape& shape, std::span<const float> teacher, size_t samples, std::mt19937_64& rng) {
  Batch b;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  b.x.resize(samples * static_cast<size_t>(shape.inputs));
  for (float& v : b.x) v = normal(rng);
  b.y.resize(samples);
  Activations acts;
  std::vector<float> unusedGrad(shape.outputLayerSize());
  b.y.assign(samples, 0.0f);  // labels 0: the "error" below is then the teacher's output
  forwardAndOutputGradient(shape, teacher, b, acts, unusedGrad);
  b.y = acts.error;
  return b;
}

float forwardAndOutputGradient(const MlpShape& shape, std::span<const float> params, const Batch& batch,
                               Activations& acts, std::span<float> outputGrad) {
  const Layers l(shape, params);
  const size_t n = batch.samples(), in = static_cast<size_t>(shape.inputs), h = static_cast<size_t>(shape.hidden);
  acts.hidden.assign(n * h, 0.0f);
  acts.error.assign(n, 0.0f);
  double squares = 0;
  for (size_t s = 0; s < n; ++s) {
    const float* x = &batch.x[s * in];
    float* a = &acts.hidden[s * h];
    float out = l.b2[0];
    for (size_t j = 0; j < h; ++j) {
      float z = l.b1[j];
      for (size_t i = 0; i < in; ++i) z += l.w1[j * in + i] * x[i];
      a[j] = std::tanh(z);
      out += l.w2[j] * a[j];
    }
    acts.error[s] = out - batch.y[s];
    squares += static_cast<double>(acts.error[s]) * acts.error[s];
  }
  // d(mean of e^2)/d out = 2e/n
  std::fill(outputGrad.begin(), outputGrad.end(), 0.0f);
  for (size_t s = 0; s < n; ++s) {
    const float g = 2.0f * acts.error[s] / static_cast<float>(n);
    for (size_t j = 0; j < h; ++j) outputGrad[j] += g * acts.hidden[s * h + j];
    outputGrad[h] += g;
  }
  return static_cast<float>(squares / static_cast<double>(n));
}

void hiddenGradient(const MlpShape& shape, std::span<const float> params, const Batch& batch, const Activations& acts,
                    std::span<float> hiddenGrad) {
  const Layers l(shape, params);
  const size_t n = batch.samples(), in = static_cast<size_t>(shape.inputs), h = static_cast<size_t>(shape.hidden);
  std::fill(hiddenGrad.begin(), hiddenGrad.end(), 0.0f);
  float* gw1 = hiddenGrad.data();
  float* gb1 = hiddenGrad.data() + h * in;
  for (size_t s = 0; s < n; ++s) {
    const float g = 2.0f * acts.error[s] / static_cast<float>(n);
    const float* x = &batch.x[s * in];
    for (size_t j = 0; j < h; ++j) {
      const float a = acts.hidden[s * h + j];
      const float dz = g * l.w2[j] * (1.0f - a * a);
      for (size_t i = 0; i < in; ++i) gw1[j * in + i] += dz * x[i];
      gb1[j] += dz;
    }
  }
}

}  // namespace train
