#include "core/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace projector {
namespace {

char Lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (Lower(text[i]) != Lower(prefix[i])) return false;
  }
  return true;
}

// Whether every character of `needle` appears in `hay` in order (case-insensitive): a name
// with parts left out ("llama3-8b" in "llama3.1-8b").
bool IsSubsequence(std::string_view needle, std::string_view hay) {
  size_t j = 0;
  for (char c : hay) {
    if (j < needle.size() && Lower(c) == Lower(needle[j])) ++j;
  }
  return j == needle.size();
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitute = diagonal + (Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> ClosestName(std::string_view given,
                                       std::span<const std::string> candidates) {
  const size_t limit = std::max<size_t>(1, given.size() / 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  bool best_contains = false;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(given, c);
    const bool contains = IsSubsequence(given, c);
    if (d < best_distance || (d == best_distance && contains && !best_contains)) {
      best_distance = d;
      best = c;
      best_contains = contains;
    }
  }
  if (best) return best;
  if (given.size() < 2) return std::nullopt;
  std::optional<std::string> prefixed;
  for (const std::string& c : candidates) {
    if (!StartsWithIgnoringCase(c, given)) continue;
    if (prefixed) return std::nullopt;  // ambiguous
    prefixed = c;
  }
  return prefixed;
}

std::string DidYouMean(std::string_view given, std::span<const std::string> candidates) {
  const std::optional<std::string> name = ClosestName(given, candidates);
  return name ? " (did you mean '" + *name + "'?)" : std::string();
}

}  // namespace projector
