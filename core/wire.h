// Requests and replies between the lanes of a WorkTeam (core/work_team.h) as bytes: plain values
// copied as they lie in memory (every rank runs the same executable on the same architecture)
// and strings with their length. A reader past the end or a length that does not fit is a
// defect of the writer, never of user input, and stops the process.
#ifndef PROJECTOR_CORE_WIRE_H_
#define PROJECTOR_CORE_WIRE_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace projector {

class WireWriter {
 public:
  template <typename T>
  WireWriter& Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "only plain values go on the wire as bytes");
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
    return *this;
  }
  WireWriter& PutString(std::string_view s) {
    Put(static_cast<uint64_t>(s.size()));
    bytes_.append(s.data(), s.size());
    return *this;
  }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    static_assert(std::is_trivially_copyable_v<T>, "only plain values go on the wire as bytes");
    T value;
    std::memcpy(&value, Advance(sizeof(T)), sizeof(T));
    return value;
  }
  std::string GetString() {
    const auto size = Get<uint64_t>();
    const char* at = Advance(size);
    return std::string(at, size);
  }
  bool AtEnd() const { return at_ == bytes_.size(); }

 private:
  const char* Advance(size_t n) {
    if (n > bytes_.size() - at_) {
      std::fprintf(stderr, "project: internal error: a work message is shorter than its reader\n");
      std::abort();
    }
    const char* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  std::string_view bytes_;
  size_t at_ = 0;
};

}  // namespace projector

#endif  // PROJECTOR_CORE_WIRE_H_
