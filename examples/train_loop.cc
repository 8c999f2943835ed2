// A training loop that logs to cairn from C++: fits y = 3x + 2 by stochastic gradient descent
// and logs the loss every step, its parameters once and the fitted weights as an artifact.
//
//   build/release/cairn_example_train --steps 200 --lr 0.05
//   build/release/cairn run -- build/release/cairn_example_train   # logs into cairn run's run
//
// The tracking server is $CAIRN_TRACKING_URI, else $MLFLOW_TRACKING_URI, else
// http://127.0.0.1:5000.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "client/active_run.h"

int main(int argc, char** argv) {
  int steps = 200;
  double lr = 0.05;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--steps") steps = std::atoi(argv[i + 1]);
    if (flag == "--lr") lr = std::atof(argv[i + 1]);
  }
  cairn::client::ActiveRun::Options options;
  options.experiment = "cpp-example";
  options.params = {{"steps", std::to_string(steps)}, {"lr", std::to_string(lr)}};
  options.tags = {{"example", "train_loop"}};
  auto run = cairn::client::ActiveRun::Start(options);
  if (!run.ok()) {
    std::fprintf(stderr, "cannot start a run: %s\n", run.status().message().c_str());
    return 1;
  }
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> x_of(-1.0, 1.0);
  std::normal_distribution<double> noise(0.0, 0.01);
  double w = 0, b = 0;
  for (int step = 0; step < steps; ++step) {
    double x = x_of(rng);
    double y = 3 * x + 2 + noise(rng);
    double err = w * x + b - y;
    w -= lr * 2 * err * x;
    b -= lr * 2 * err;
    (*run)->LogMetric("loss", err * err, step);
  }
  (*run)->LogMetric("w", w, steps);
  (*run)->LogMetric("b", b, steps);
  const std::string weights = "/tmp/cairn-example-weights-" + (*run)->run_id() + ".txt";
  std::ofstream(weights) << "w " << w << "\nb " << b << "\n";
  cairn::Status uploaded = (*run)->LogArtifact(weights, "model/weights.txt");
  std::remove(weights.c_str());
  cairn::Status ended = (*run)->End();
  std::printf("run %s: w=%.3f b=%.3f\n", (*run)->run_id().c_str(), w, b);
  if (!uploaded.ok() || !ended.ok()) {
    std::fprintf(stderr, "logging failed: %s\n",
                 (!uploaded.ok() ? uploaded : ended).message().c_str());
    return 1;
  }
  return 0;
}
