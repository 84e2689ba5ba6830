//go:build !linux

package server_test

import (
	"database/sql"
	"time"
)

// backendCPU is not measured here.
func backendCPU(*sql.DB) map[int]time.Duration { return nil }
