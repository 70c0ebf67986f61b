package benchmarks

import (
	"testing"
	"time"
)

// cpuClock reports, as the metric cpu-ns/op, the CPU time the process
// used per iteration between its start and report. On a machine shared
// with other work, a benchmark's wall time per iteration grows with the
// share of the CPU the process did not get; its CPU time does not, so
// the difference between two rows of one run is the code's.
type cpuClock struct {
	start time.Duration
	ok    bool
}

// startCPUClock starts a cpuClock.
func startCPUClock() cpuClock {
	start, ok := processCPUTime()
	return cpuClock{start: start, ok: ok}
}

// report reports the CPU time per iteration of b since c started.
func (c cpuClock) report(b *testing.B) {
	end, ok := processCPUTime()
	if c.ok && ok && b.N > 0 {
		b.ReportMetric(float64(end-c.start)/float64(b.N), "cpu-ns/op")
	}
}
