// Snippet for docs/fusion.md (spec §FUS): the v4.1 gate as a function of the
// dot product, and one (token, stream) of the v4.1 gate after wkv.
#include <cstdio>
#include <string>
#include <vector>

#include "reference/fusion.h"

using namespace engram;

int main() {
  //! [gate]
  // sigmoid(copysign(sqrt(max(|dot|, 1e-6)), dot)), float64 reference.
  const double dots[] = {-4.0, -1.0, -1e-9, -0.0, 0.0, 1e-9, 1e-6, 0.25, 1.0, 4.0};
  for (double d : dots) {
    const GateParts g = GateV41(d, Precision::kFloat64);
    const GateParts demo = GateDemo(d, Precision::kFloat64);
    std::printf("dot %-7g  signed root %-10.6g  v4.1 gate %.9f   demo gate %.9f\n", d, g.signed_root, g.gate,
                demo.gate);
  }
  //! [gate]

  //! [stream]
  // One stream of width 4: h = x_c, key k_c, value v, weights (bf16 bit patterns).
  auto bf16 = [](std::vector<double> v) {
    std::vector<uint16_t> b;
    for (double x : v) b.push_back(ToBf16(x));
    return b;
  };
  const std::vector<uint16_t> h = bf16({1.0, -2.0, 0.5, 3.0}), key = bf16({0.5, -1.0, 1.0, 2.0}),
                              value = bf16({0.25, 0.25, -0.5, 1.0}), qw = bf16({1.0, 1.0, 1.0, 1.0}),
                              kw = bf16({1.0, 0.5, 1.0, 1.0});
  const V41StreamTrace t = FuseV41Stream(h, key, value, qw, kw, /*eps=*/1e-20, /*masked=*/false, Precision::kFloat64);
  //! [stream]
  std::printf("mean(h^2) %g  rstd_h %.9g\nmean(k^2) %g  rstd_k %.9g\n", t.mean_h2, t.rstd_h, t.mean_k2, t.rstd_k);
  std::printf("sum h*w*k %g  dot %.9g  gate %.9f\n", t.sum_hwk, t.dot, t.gate);
  std::printf("out = h + gate*v:");
  for (double x : t.out) std::printf(" %.9g", x);
  std::printf("\nout (bf16):");
  for (uint16_t b : t.out_bf16) std::printf(" %g", Bf16Value(b));
  std::printf("\n");
  const V41StreamTrace m = FuseV41Stream(h, key, value, qw, kw, 1e-20, /*masked=*/true, Precision::kFloat64);
  std::printf("masked position: gate %g, out (bf16):", m.gate);
  for (uint16_t b : m.out_bf16) std::printf(" %g", Bf16Value(b));
  std::printf("\n");
  return 0;
}
