// Strong unit types for the projection core: seconds, bytes, FLOPs, their rates and
// frequencies. Each Quantity holds a double in its SI base unit; only physically meaningful
// cross-unit operators exist, so adding Seconds to Bytes does not compile.
#ifndef PROJECTOR_CORE_UNITS_H_
#define PROJECTOR_CORE_UNITS_H_

#include <compare>

namespace projector {

template <typename Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double si) : v_(si) {}
  // The raw SI value; use only at boundaries (I/O, Eigen, closed-form tests).
  constexpr double value() const { return v_; }

  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity operator+(Quantity o) const { return Quantity(v_ + o.v_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v_ - o.v_); }
  constexpr Quantity& operator+=(Quantity o) {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    v_ -= o.v_;
    return *this;
  }
  constexpr Quantity operator*(double s) const { return Quantity(v_ * s); }
  constexpr Quantity operator/(double s) const { return Quantity(v_ / s); }
  constexpr Quantity& operator*=(double s) {
    v_ *= s;
    return *this;
  }
  constexpr double operator/(Quantity o) const { return v_ / o.v_; }
  friend constexpr Quantity operator*(double s, Quantity q) { return Quantity(s * q.v_); }

 private:
  double v_ = 0.0;
};

using Seconds = Quantity<struct SecondsTag>;
using Bytes = Quantity<struct BytesTag>;
using Flops = Quantity<struct FlopsTag>;
using BytesPerSecond = Quantity<struct BytesPerSecondTag>;
using FlopsPerSecond = Quantity<struct FlopsPerSecondTag>;
using Hertz = Quantity<struct HertzTag>;

constexpr Seconds operator/(Bytes b, BytesPerSecond bw) { return Seconds(b.value() / bw.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr Bytes operator*(BytesPerSecond bw, Seconds t) { return Bytes(bw.value() * t.value()); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.value() * t.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }

// The quantity, or zero when it is negative (an exposed remainder, a time left).
template <typename Tag>
constexpr Quantity<Tag> Max0(Quantity<Tag> q) {
  return q.value() > 0 ? q : Quantity<Tag>(0);
}

// Named constructors keep every conversion in one place. GB = 1e9, GiB = 2^30.
constexpr Seconds Microseconds(double us) { return Seconds(us * 1e-6); }
constexpr Seconds Milliseconds(double ms) { return Seconds(ms * 1e-3); }
constexpr Bytes Kibibytes(double kib) { return Bytes(kib * 1024.0); }
constexpr Bytes Mebibytes(double mib) { return Bytes(mib * 1024.0 * 1024.0); }
constexpr Bytes Gibibytes(double gib) { return Bytes(gib * 1024.0 * 1024.0 * 1024.0); }
constexpr Bytes Megabytes(double mb) { return Bytes(mb * 1e6); }
constexpr Bytes Gigabytes(double gb) { return Bytes(gb * 1e9); }
constexpr BytesPerSecond GigabytesPerSecond(double gbs) { return BytesPerSecond(gbs * 1e9); }
constexpr BytesPerSecond TerabytesPerSecond(double tbs) { return BytesPerSecond(tbs * 1e12); }
// Network rates quoted in bits: 400 Gb/s = 50 GB/s.
constexpr BytesPerSecond GigabitsPerSecond(double gbps) { return BytesPerSecond(gbps * 1e9 / 8.0); }
constexpr FlopsPerSecond TeraFlopsPerSecond(double tf) { return FlopsPerSecond(tf * 1e12); }
constexpr Hertz Megahertz(double mhz) { return Hertz(mhz * 1e6); }

constexpr double ToMicroseconds(Seconds s) { return s.value() * 1e6; }
constexpr double ToMilliseconds(Seconds s) { return s.value() * 1e3; }
constexpr double ToGigabytesPerSecond(BytesPerSecond b) { return b.value() * 1e-9; }
constexpr double ToTeraFlopsPerSecond(FlopsPerSecond f) { return f.value() * 1e-12; }
constexpr double ToMegahertz(Hertz f) { return f.value() * 1e-6; }

namespace unit_literals {
constexpr Seconds operator""_us(long double v) { return Microseconds(static_cast<double>(v)); }
constexpr Seconds operator""_ms(long double v) { return Milliseconds(static_cast<double>(v)); }
constexpr Seconds operator""_s(long double v) { return Seconds(static_cast<double>(v)); }
}  // namespace unit_literals

}  // namespace projector

#endif  // PROJECTOR_CORE_UNITS_H_
