// The build-time budget's reference compile (scripts/timed-build.sh): a fixed
// piece of work for the compiler, of the kind that dominates tide's build
// (a heavy header parsed, its templates instantiated and optimized), timed on
// the same host around a clean build. The budget check prints it beside the
// one recorded with the budget, to tell a slower host from a grown build.
// Never change it without re-recording results/budgets/build.toml.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

std::string referenceRoundTrip(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  const auto m = j.get<std::map<std::string, std::vector<double>>>();
  nlohmann::json out = m;
  out["count"] = m.size();
  return out.dump(2);
}
