//go:build unix

package benchmarks

import (
	"syscall"
	"time"
)

// processCPUTime returns the CPU time the process has used (user and
// system), false when the system does not tell.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
