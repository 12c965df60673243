#pragma once
// nlohmann::json <-> plain Python objects (dict, list, str, int, float,
// bool, None): the planner's and simulator's reports reach Python in the
// schemas the CLI writes, without a round trip through text.

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

namespace tide::python {

pybind11::object toPython(const nlohmann::json& j);
// Fails (kInvalidArgument) on anything but those plain types.
nlohmann::json fromPython(pybind11::handle h, const std::string& where);

}  // namespace tide::python
