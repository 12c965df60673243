#include "python/bindings/json_object.h"

#include "python/bindings/status_error.h"

namespace tide::python {
namespace py = pybind11;

py::object toPython(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(toPython(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = toPython(it.value());
      return out;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return py::none();
}

nlohmann::json fromPython(py::handle h, const std::string& where) {
  if (h.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return h.cast<int64_t>();
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    nlohmann::json out = nlohmann::json::array();
    for (auto v : h) out.push_back(fromPython(v, where));
    return out;
  }
  if (py::isinstance<py::dict>(h)) {
    nlohmann::json out = nlohmann::json::object();
    for (auto kv : h.cast<py::dict>()) {
      if (!py::isinstance<py::str>(kv.first)) invalid(where + ": keys must be str");
      out[kv.first.cast<std::string>()] = fromPython(kv.second, where);
    }
    return out;
  }
  invalid(where + ": " + std::string(py::str(py::type::of(h).attr("__name__"))) +
          " is not a JSON value (dict, list, str, int, float, bool or None)");
}

}  // namespace tide::python
