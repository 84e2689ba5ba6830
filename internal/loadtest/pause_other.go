//go:build !linux

package loadtest

import "time"

// pauser waits for a paced request's time. Only Linux has the timerfd that
// keeps an in-process server's idle collection from delaying the wake
// (pause_linux.go); elsewhere it is time.Sleep.
type pauser struct{}

func newPauser() *pauser { return &pauser{} }

func (*pauser) pause(d time.Duration) { time.Sleep(d) }

func (*pauser) close() {}

func (*pauser) polled() bool { return false }
