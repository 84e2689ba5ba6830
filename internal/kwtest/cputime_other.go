//go:build !unix

package kwtest

import "time"

// CPUTime is not measured here (the benchmark reports 0).
func CPUTime() time.Duration { return 0 }
