// "Did you mean" for names a user types: the closest known name to a mistyped one.
#ifndef PROJECTOR_CORE_SUGGEST_H_
#define PROJECTOR_CORE_SUGGEST_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace projector {

// Levenshtein distance (insertions, deletions, substitutions, each 1), ASCII case-insensitive.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `given`, when close enough to be a likely slip: an edit distance of
// at most max(1, |given|/3), or one name that starts with `given` (at least 2 characters: "h100"
// for "h100-sxm"). Ties go to a candidate holding all of `given`'s characters in order
// ("llama3.1-8b" for "llama3-8b", not "llama2-7b"), then to the first. nullopt when none is
// close.
std::optional<std::string> ClosestName(std::string_view given,
                                       std::span<const std::string> candidates);

// " (did you mean 'x'?)" for the closest name, else "".
std::string DidYouMean(std::string_view given, std::span<const std::string> candidates);

}  // namespace projector

#endif  // PROJECTOR_CORE_SUGGEST_H_
