"""An analytic S-curve model of a link between chips.

A transfer of s bytes costs a launch overhead, one round trip (the receiver's credit or
acknowledgement), and s / link speed: time(s) = launch + rtt + s / bandwidth. Its effective
throughput s / time(s) rises along an S-curve over log(size) and saturates at the link speed;
half the link speed is reached at s = bandwidth * (launch + rtt).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SCurveLink:
    bytes_per_s: float
    launch_ns: float
    rtt_ns: float

    def time_ns(self, nbytes: float) -> float:
        if nbytes <= 0:
            return 0.0
        return self.launch_ns + self.rtt_ns + nbytes * 1e9 / self.bytes_per_s

    def throughput(self, nbytes: float) -> float:
        """Effective bytes per second for one transfer of `nbytes`."""
        return nbytes * 1e9 / self.time_ns(nbytes) if nbytes > 0 else 0.0

    def half_throughput_bytes(self) -> float:
        return self.bytes_per_s * (self.launch_ns + self.rtt_ns) / 1e9
