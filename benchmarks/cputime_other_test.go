//go:build !unix

package benchmarks

import "time"

// processCPUTime: see cputime_unix_test.go; this system does not tell.
func processCPUTime() (time.Duration, bool) { return 0, false }
