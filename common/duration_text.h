// Durations as people read them. Four formats, each what its readers already see (and, for the
// config spelling, what docs/configuration.md shows), so they stay four rather than one:
//  - FormatDuration: as the config file spells a duration ("250ms", "5s"; docs/configuration.md),
//    so a message about a setting names it the way the user can write it back.
//  - FormatSeconds: seconds in a verdict's reason ("in the last 60 s", "+1 in 0.2 s"), where a
//    precise number to compare with the configured window matters more than the unit.
//  - FormatCoarseDuration: an age or span in a reason that may be anything from seconds to a day
//    ("90 s", "5 min", "3 h"), as precise as a person needs to place it.
//  - FormatUptime: the status page's uptime ("2d 3h 4m 5s"), every unit down to the second.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rdmahd {

// "1500ms", "5s": whole seconds when `d` is a positive multiple of a second, else milliseconds
// ("0ms" for zero, "-5ms" for a negative duration).
std::string FormatDuration(std::chrono::milliseconds d);

// "60 s": `seconds` rounded to the nearest whole second (half up; meant for non-negative spans),
// or below 10 s to the nearest tenth ("0.2 s", "2.5 s"; "2 s", not "2.0 s").
std::string FormatSeconds(double seconds);

// "90 s" below 120 s (negative: "0 s"), "5 min" below 2 h, "3 h" above (minutes and hours rounded
// down).
std::string FormatCoarseDuration(std::int64_t seconds);

// "2d 3h 4m 5s", leading units left out while they are zero ("4m 5s", "5s"); fractions dropped.
std::string FormatUptime(double seconds);

}  // namespace rdmahd
