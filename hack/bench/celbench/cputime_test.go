package celbench

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user and system CPU time of this process so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU adds cpu-ns/op beside ns/op. On a shared machine, wall time
// includes waiting for a core; the CPU time the process spent (garbage
// collection included) is the steadier figure. Call it before b.Loop.
func reportCPU(b *testing.B) {
	start := processCPU(b)
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
		}
	})
}
