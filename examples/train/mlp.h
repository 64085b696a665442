// The model of the training loop: a two-layer perceptron (tanh hidden layer,
// one linear output) fitted by mean squared error to a fixed random "teacher"
// network of the same shape. Everything runs on the host; HCL only moves the
// gradients, which is what a data-parallel job asks of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace train {

struct MlpShape {
  int inputs = 16;
  int hidden = 256;
  // Parameters in the order backpropagation produces their gradients: the
  // output layer (weights, bias), then the hidden layer (weights, bias).
  size_t outputLayerSize() const { return static_cast<size_t>(hidden) + 1; }
  size_t hiddenLayerSize() const { return static_cast<size_t>(hidden) * (static_cast<size_t>(inputs) + 1); }
  size_t parameterCount() const { return outputLayerSize() + hiddenLayerSize(); }
};

struct Batch {
  std::vector<float> x;  // samples x inputs, row-major
  std::vector<float> y;  // samples
  size_t samples() const { return y.size(); }
};

// Weights drawn uniformly in +-1/sqrt(fan-in), biases zero.
std::vector<float> initialParameters(const MlpShape& shape, uint64_t seed);

// `samples` inputs from `rng`, labelled by the teacher.
Batch makeBatch(const MlpShape& shape, std::span<const float> teacher, size_t samples, std::mt19937_64& rng);

// Mean squared error of `params` on `batch`; fills `outputGrad` (the output
// layer's gradient) and then `hiddenGrad`, calling `outputReady(loss)` in
// between so that the caller can start reducing the first while the second
// is computed.
template <typename OnOutputReady>
float lossAndGradients(const MlpShape& shape, std::span<const float> params, const Batch& batch,
                       std::span<float> outputGrad, std::span<float> hiddenGrad, OnOutputReady&& outputReady);

// The forward and backward passes behind lossAndGradients, in two halves.
struct Activations {
  std::vector<float> hidden;  // samples x hidden, after tanh
  std::vector<float> error;   // samples: prediction - label
};
float forwardAndOutputGradient(const MlpShape& shape, std::span<const float> params, const Batch& batch,
                               Activations& acts, std::span<float> outputGrad);
void hiddenGradient(const MlpShape& shape, std::span<const float> params, const Batch& batch, const Activations& acts,
                    std::span<float> hiddenGrad);

template <typename OnOutputReady>
float lossAndGradients(const MlpShape& shape, std::span<const float> params, const Batch& batch,
                       std::span<float> outputGrad, std::span<float> hiddenGrad, OnOutputReady&& outputReady) {
  Activations acts;
  const float loss = forwardAndOutputGradient(shape, params, batch, acts, outputGrad);
  outputReady(loss);
  hiddenGradient(shape, params, batch, acts, hiddenGrad);
  return loss;
}

}  // namespace train
