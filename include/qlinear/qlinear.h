// qlinear's public API in one include: open a checkpoint, plan and convert its linear layers,
// shard them, select a kernel per layer and run it. Link the qlinear_* module libraries.
#pragma once

#include "convert/canonical.h"
#include "convert/convert.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "kernels/device.h"
#include "kernels/kernel.h"
#include "kernels/problem.h"
#include "kernels/registry.h"
#include "kernels/select.h"
#include "quant/layer_plan.h"
#include "quant/quant_spec.h"
#include "shard/shard.h"
