#include "convert/dense_convert.h"

namespace qlinear {

Status check_dense_weight(const RawTensor& weight, std::string_view role) {
  QL_RETURN_IF_ERROR(check_dtype(weight, {DType::kF32, DType::kBF16, DType::kF16}, role));
  if (weight.shape.size() != 2) {
    return make_error(ErrorCode::kMisconfigured, "{} has shape {}; {} must be 2-D [N, K]",
                      weight.where, shape_to_string(weight.shape), role);
  }
  return check_byte_size(weight);
}

Result<DenseWeights> convert_dense(const DenseTensors& t) {
  QL_RETURN_IF_ERROR(check_dense_weight(t.weight, "an unquantized weight"));
  DenseWeights w;
  w.N = t.weight.shape[0];
  w.K = t.weight.shape[1];
  w.dtype = t.weight.dtype;
  w.data.assign(t.weight.bytes.begin(), t.weight.bytes.end());
  if (t.bias) {
    QL_ASSIGN_OR_RETURN(w.bias, read_bias(*t.bias, w.N));
  }
  return w;
}

}  // namespace qlinear
