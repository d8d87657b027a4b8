// qlinear's public API in one include. Link qlinear::qlinear (or qlinear::qlinear_static) from
// find_package(qlinear). These headers need only this folder on the include path.
#pragma once

#include "qlinear/device.h"
#include "qlinear/dtype.h"
#include "qlinear/explain.h"
#include "qlinear/linear.h"
#include "qlinear/log.h"
#include "qlinear/model.h"
#include "qlinear/status.h"
#include "qlinear/version.h"
#include "qlinear/view.h"
