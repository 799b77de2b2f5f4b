//go:build !unix

package upstream

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
