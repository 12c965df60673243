#pragma once
// The parts of the extension module, each defined in its own file.

#include <pybind11/pybind11.h>

namespace tide::python {

void bindData(pybind11::module_& m);     // Store, Node, Batch, Ragged
void bindBus(pybind11::module_& m);      // BusConfig, RolloutProducer, RolloutConsumer
void bindSim(pybind11::module_& m);      // strategies, plan, simulate, compare
void bindWeights(pybind11::module_& m);  // WeightSync

}  // namespace tide::python
