// Linear: one linear layer y = x W^T + bias, ready to run on a device. Creating one selects a
// kernel per range of M (rows of x) from the platform's ordered registry, under a policy, and
// prepares each selected kernel's weight layout on the device; running one picks the prepared
// variant for the call's M. The CLI, the benchmarks and the runner all go through it.
//
// Thread safety: run() on one Linear from several threads at once is safe when each thread
// passes its own ExecContext (its own workspace). Concurrent CPU runs share the cores: together
// they never start more threads than the machine has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qlinear/device.h"
#include "qlinear/dtype.h"
#include "qlinear/status.h"
#include "qlinear/view.h"

namespace qlinear {

struct Canonical;      // the canonical weight form every checkpoint format converts to (internal)
struct LinearProblem;  // a layer's kernel-selection problem (internal)

// --linear-backend: which kernel families may run. Strict: a filter that leaves no kernel for a
// layer is an error, never a silent fallback.
enum class LinearBackend { kAuto, kNative, kBlas, kReference };
std::string_view linear_backend_name(LinearBackend backend);

struct SelectionPolicy {
  LinearBackend backend = LinearBackend::kAuto;
  std::string kernel;                 // --kernel NAME, or "" for any
  std::vector<std::string> disabled;  // from QLINEAR_DISABLED_KERNELS
  // --int8-activations: integer-weight layers quantize their activations to int8 (per row and
  // weight group) and run on an int8 dot-product kernel (W4A8 / W8A8 int). Off by default: it
  // changes the numerics, so it is never chosen silently.
  bool int8_activations = false;
};

// Builds a policy from the CLI strings and the QLINEAR_DISABLED_KERNELS value (comma list,
// spaces trimmed). Unknown backends and kernel names are errors listing the valid names, as are
// contradictions (--kernel naming a disabled kernel or one the backend filter excludes).
Result<SelectionPolicy> make_policy(std::string_view backend, std::string_view kernel,
                                    std::string_view disabled_env);

// What one run may use.
struct ExecContext {
  int threads = 0;         // CPU threads (0: all cores), shared with concurrent runs
  void* stream = nullptr;  // a cudaStream_t or cl_command_queue; null: the device's default
  // Caller-owned scratch in the layer's memory (location()), at least workspace_bytes(M) bytes.
  // run() never allocates, synchronises or reads device memory back.
  Workspace workspace;
};

struct LinearOptions {
  SelectionPolicy policy;
  DType act_dtype = DType::kBF16;  // x as the caller feeds it (f32, bf16 or f16)
  DType out_dtype = DType::kF32;   // y as the kernel writes it (f32, bf16 or f16)
  int64_t max_rows = 4096;         // the largest M the layer will run with
  int tp = 1;                      // the tensor-parallel size the weights were sharded for
  // The output's two halves are the gate and up projections of a SwiGLU MLP ([gate | up], N
  // even): a kernel may lay its columns out at prepare so that a run can end with the
  // SwiGluEpilogue below. A hint: kernels that cannot use it ignore it; results are the same.
  bool swiglu_halves = false;
};

// A residual add and RMSNorm taken over by the linear layers on each side of it (docs/runner.md
// "The norm inside the linear layers"): the layer before the norm ends with the add and leaves the
// norm's input unscaled plus its sums of squares (AddNormEpilogue); the layer after it scales its
// product by each row's inverse RMS (RmsPrologue). That removes the norm's own launch from a
// decode step. Linear::fusion_at says which a layer's kernel for M rows can do.
struct AddNormEpilogue {
  // After y = x W^T + bias, rounded to the layer's out_dtype(): residual += y (f32 adds);
  // pre = weight * residual, rounded to pre's dtype; partials[t, j] = the f64 sum of
  // residual[t, c]^2 over the columns c of [16 j, 16 j + 16) (in an order of the kernel's
  // choosing, the same on every run). y itself is not written.
  MatrixView residual;     // f32 [M, N]
  ConstMatrixView weight;  // f32 [1, N]
  MatrixView pre;          // bf16, f16 or f32 [M, N]
  MatrixView partials;     // f64 [M, ceil(N / 16)]
};
struct RmsPrologue {
  // x holds an AddNormEpilogue's pre; y = inv_t * (x W^T) + bias, where inv_t is the f32 of
  // 1 / sqrt(s_t / cols + eps) in f64 and s_t the f64 sum of partials[t, :].
  ConstMatrixView partials;  // f64 [M, P]
  int64_t cols = 0;          // the norm's width (the N of the layer that wrote the partials)
  float eps = 0.0f;
};
// The SiLU-gated product after a [gate | up] layer (LinearOptions::swiglu_halves), taken over from
// the decoder's silu_mul: after y = x W^T + bias, rounded to the layer's out_dtype(),
// out[t, j] = silu(y[t, j]) * y[t, N / 2 + j] with silu(g) = g / (1 + exp(-g)) in f32, rounded to
// out's dtype. y itself is not written.
struct SwiGluEpilogue {
  MatrixView out;  // bf16, f16 or f32 [M, N / 2]
};
struct LinearFusion {
  std::optional<AddNormEpilogue> add_norm;
  std::optional<RmsPrologue> rms;
  std::optional<SwiGluEpilogue> swiglu;  // not with add_norm (one epilogue per run)

  bool empty() const { return !add_norm && !rms && !swiglu; }
};
// What a prepared kernel can fuse at some M.
struct FusionSupport {
  bool add_norm = false;
  bool rms = false;
  bool swiglu = false;
};

// One range of M and what runs it.
struct LinearBucket {
  int64_t m_min = 1;
  int64_t m_max = 1;
  std::string kernel;   // the registry name, "cpu.w4a16.avx512"
  std::string engine;   // the kernel's algorithm in this range ("inline", "panel"), or ""
  std::string problem;  // the bucket's problem string: a `qlinear bench --problem` reproducer
};

class Linear {
 public:
  // Selects and prepares `weights` (one shard's canonical form) for `device` (a real one: a
  // simulated --target can be explained, not run). Errors: no kernel for some range of M (every
  // candidate and its reason), or a failed prepare (e.g. device memory).
  static Result<Linear> create(const Canonical& weights, const Device& device,
                               const LinearOptions& options, std::string_view name = "");

  // The same for an explicit problem (its fp8 mode, int8 activations and M range are kept;
  // benchmarks and dispatch-line reproducers use it).
  static Result<Linear> create_for_problem(const Canonical& weights, const LinearProblem& problem,
                                           const Device& device, const SelectionPolicy& policy,
                                           std::string_view name = "");

  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;
  ~Linear();

  std::string_view name() const;
  int64_t K() const;
  int64_t N() const;
  int64_t max_rows() const;
  DType act_dtype() const;
  DType out_dtype() const;
  Location location() const;  // where x, y and the workspace live
  const std::vector<LinearBucket>& buckets() const;
  // The bucket a run of `rows` rows goes to.
  const LinearBucket& bucket_for(int64_t rows) const;
  // Workspace bytes a run of up to `rows` rows needs.
  std::size_t workspace_bytes(int64_t rows) const;
  // Every prepared kernel's run can be captured in a CUDA graph (no allocation, no sync).
  bool capturable() const;

  // y [M, N] = x [M, K] W^T + bias for 0 <= M <= max_rows(): x of act_dtype(), y of
  // out_dtype(), both in location() (any leading dimension >= their columns). The shapes,
  // dtypes, locations and workspace are checked before the kernel runs.
  Status run(ConstMatrixView x, MatrixView y, ExecContext& ctx) const;
  // The same with fused work around the product (LinearFusion): an error (kUnsupported) when
  // the kernel for x's rows cannot do a part asked for (fusion_at), or when a fusion view has
  // the wrong shape, dtype or location.
  Status run(ConstMatrixView x, MatrixView y, ExecContext& ctx, const LinearFusion& fusion) const;
  // The fused work the kernel of a run of `rows` rows can do (none for most kernels).
  FusionSupport fusion_at(int64_t rows) const;

 private:
  struct Impl;
  explicit Linear(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qlinear
