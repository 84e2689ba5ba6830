package loadtest

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pauser waits for a paced request's time through the network poller: a
// timerfd read like a socket. The runtime's own timers are run only by a
// scheduler looking for work, and an in-process server's idle garbage
// collection workers, which take every processor the moment nothing is
// runnable, look only at run queues and the network poller until the
// scheduler preempts them, 10 ms later. Through time.Sleep a paced client
// then held its requests back for that long, all of them at once, and sent
// them in a burst: a fleet's requests arrive over the network whatever the
// server's collector is doing, and idle collection yields to them.
// BenchmarkPauseDuringCollection shows the difference: a 500 µs pause during
// a collection overran by 20 ms (median) through time.Sleep, 0.3 ms here.
type pauser struct {
	f  *os.File // nil: the kernel refused a timerfd, so time.Sleep
	rc syscall.RawConn
}

func newPauser() *pauser {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &pauser{}
	}
	// A non-blocking descriptor makes os.NewFile register it with the
	// poller, so a Read parks the goroutine instead of a thread.
	f := os.NewFile(uintptr(fd), "loadtest-pause")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return &pauser{}
	}
	return &pauser{f: f, rc: rc}
}

// pause returns after d.
func (p *pauser) pause(d time.Duration) {
	if d <= 0 {
		return
	}
	if p.f == nil {
		time.Sleep(d)
		return
	}
	var err error
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if cerr := p.rc.Control(func(fd uintptr) { err = unix.TimerfdSettime(int(fd), 0, &spec, nil) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		time.Sleep(d)
		return
	}
	var expirations [8]byte
	if _, err := p.f.Read(expirations[:]); err != nil {
		time.Sleep(d)
	}
}

func (p *pauser) close() {
	if p.f != nil {
		p.f.Close()
	}
}

// polled reports whether pause waits through the poller.
func (p *pauser) polled() bool { return p.f != nil }
