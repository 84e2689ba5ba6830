//go:build !linux

package server_test

import (
	"database/sql"
	"time"
)

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }

// backendCPU is not measured here.
func backendCPU(*sql.DB) map[int]time.Duration { return nil }
