package license

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// fakeSeats are Seats over in-memory devices and sessions.
type fakeSeats struct {
	devices []Device
	live    []Session
	ended   []string // IDs in the order they were ended
}

func (f *fakeSeats) seats(max int) Seats {
	return Seats{Max: max, What: "license key",
		Devices: func() ([]Device, error) { return f.devices, nil },
		Bind: func(hwid string) error {
			for _, d := range f.devices {
				if d.HWID == hwid {
					return nil
				}
			}
			f.devices = append(f.devices, Device{HWID: hwid})
			return nil
		},
		Live: func() ([]Session, error) { return append([]Session(nil), f.live...), nil },
		End: func(id, reason string) error {
			if reason != CodeSessionExpired {
				return fmt.Errorf("ended with %s, want %s", reason, CodeSessionExpired)
			}
			f.ended = append(f.ended, id)
			return nil
		}}
}

func TestSeatsBindDevice(t *testing.T) {
	cases := []struct {
		name     string
		max      int
		bound    []string
		hwid     string
		wantCode string // "" = bound
	}{
		{"first device", 1, nil, "pc-1", ""},
		{"known device on a full key", 1, []string{"pc-1"}, "pc-1", ""},
		{"second device, single seat", 1, []string{"pc-1"}, "pc-2", CodeHWIDMismatch},
		{"third device, two seats", 2, []string{"pc-1", "pc-2"}, "pc-3", CodeDeviceLimit},
		{"second device, two seats", 2, []string{"pc-1"}, "pc-2", ""},
	}
	for _, c := range cases {
		f := &fakeSeats{}
		for _, h := range c.bound {
			f.devices = append(f.devices, Device{HWID: h})
		}
		err := f.seats(c.max).BindDevice(c.hwid)
		if got := apperr.CodeOf(err); got != c.wantCode {
			t.Errorf("%s: BindDevice(%s) code %q (%v), want %q", c.name, c.hwid, got, err, c.wantCode)
		}
		var hwids []string
		for _, d := range f.devices {
			hwids = append(hwids, d.HWID)
		}
		if c.wantCode == "" && !contains(hwids, c.hwid) {
			t.Errorf("%s: devices %v after binding %s", c.name, hwids, c.hwid)
		}
		if c.wantCode != "" && len(f.devices) != len(c.bound) {
			t.Errorf("%s: a refused device was bound: %v", c.name, f.devices)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// RetireOverflow frees exactly one seat when full, preferring a stale
// session, then the same device's oldest, then the oldest overall.
func TestSeatsRetireOverflow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	staleBefore := now.Add(-3 * time.Minute)
	fresh, stale := now.Add(-time.Minute), now.Add(-5*time.Minute)
	cases := []struct {
		name string
		max  int
		live []Session
		hwid string
		want []string
	}{
		{"room left", 2, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}}, "pc-2", nil},
		{"stale first", 2, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}, {ID: "b", HWID: "pc-2", LastSeenAt: stale}}, "pc-1", []string{"b"}},
		{"same device before oldest", 2, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}, {ID: "b", HWID: "pc-2", LastSeenAt: fresh}}, "pc-2", []string{"b"}},
		{"oldest overall", 2, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}, {ID: "b", HWID: "pc-2", LastSeenAt: fresh}}, "pc-3", []string{"a"}},
		{"zero seats count as one", 0, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}}, "pc-1", []string{"a"}},
		{"over-full after a seat cut", 1, []Session{{ID: "a", HWID: "pc-1", LastSeenAt: fresh}, {ID: "b", HWID: "pc-1", LastSeenAt: fresh}}, "pc-1", []string{"a", "b"}},
	}
	for _, c := range cases {
		f := &fakeSeats{live: c.live}
		if err := f.seats(c.max).RetireOverflow(c.hwid, staleBefore); err != nil {
			t.Fatalf("%s: RetireOverflow: %v", c.name, err)
		}
		if len(f.ended) != len(c.want) {
			t.Errorf("%s: ended %v, want %v", c.name, f.ended, c.want)
			continue
		}
		for i := range c.want {
			if f.ended[i] != c.want[i] {
				t.Errorf("%s: ended %v, want %v", c.name, f.ended, c.want)
				break
			}
		}
	}
}

// TakeSeat: a stale session holds no seat (and is ended), the same machine
// reuses its seat, and when every other seat is held the login is refused
// with the seat message, ending nothing but stale sessions.
func TestSeatsTakeSeat(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	stale := now.Add(-180 * time.Second)
	sess := func(id, hwid string, silent time.Duration) Session {
		return Session{ID: id, HWID: hwid, LastSeenAt: now.Add(-silent)}
	}
	cases := []struct {
		name      string
		max       int
		live      []Session
		hwid      string
		wantCode  string
		wantEnded []string
		wantInUse int
	}{
		{"free seat", 2, []Session{sess("a", "pc-a", 0)}, "pc-b", "", nil, 2},
		{"full", 2, []Session{sess("a", "pc-a", 0), sess("b", "pc-b", 179*time.Second)}, "pc-c", CodeDeviceLimit, nil, 2},
		{"stale seat frees", 2, []Session{sess("a", "pc-a", 0), sess("b", "pc-b", 181*time.Second)}, "pc-c", "", []string{"b"}, 2},
		{"same machine reuses its seat", 2, []Session{sess("a", "pc-a", 0), sess("b", "pc-b", 0)}, "pc-a", "", []string{"a"}, 2},
		{"same machine, but the others fill the seats", 1, []Session{sess("a", "pc-a", 0), sess("b", "pc-b", 0)}, "pc-a",
			CodeDeviceLimit, nil, 1},
		{"refused, stale ones still end", 1, []Session{sess("a", "pc-a", 0), sess("b", "pc-b", 200*time.Second)}, "pc-c",
			CodeDeviceLimit, []string{"b"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSeats{live: c.live}
			seen := func(s *Session) time.Time { return s.LastSeenAt }
			taken, err := f.seats(c.max).TakeSeat(c.hwid, stale, seen)
			if got := apperr.CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, c.wantCode, err)
			}
			if fmt.Sprint(f.ended) != fmt.Sprint(c.wantEnded) {
				t.Fatalf("ended %v, want %v", f.ended, c.wantEnded)
			}
			if taken.InUse != c.wantInUse || taken.Max != c.max {
				t.Fatalf("taken %+v, want %d of %d", taken, c.wantInUse, c.max)
			}
			if err != nil && c.max > 1 && !strings.Contains(err.Error(), fmt.Sprintf("All %d seats", c.max)) {
				t.Fatalf("message %q", err.Error())
			}
		})
	}
	// lastSeen decides staleness: a heartbeat only buffered in memory keeps a seat.
	f := &fakeSeats{live: []Session{sess("z", "pc-z", time.Hour)}}
	_, err := f.seats(1).TakeSeat("pc-y", stale, func(*Session) time.Time { return now })
	if apperr.CodeOf(err) != CodeDeviceLimit || len(f.ended) != 0 {
		t.Fatalf("a session with a buffered heartbeat lost its seat: %v, ended %v", err, f.ended)
	}
}

// Borrowed seats (license files of a floating key) count with the live
// sessions, one per machine: a machine holding a session and a borrow
// counts once; the asking machine's own borrow is its seat; BorrowSeat
// counts the same but leaves the machine's own session open.
func TestSeatsBorrowed(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	stale := now.Add(-180 * time.Second)
	seen := func(s *Session) time.Time { return s.LastSeenAt }
	borrow := func(hwid string) IssuedFile {
		return IssuedFile{HWID: hwid, Floating: true, ValidUntil: now.Add(time.Hour)}
	}
	cases := []struct {
		name      string
		max       int
		live      []Session
		borrows   []IssuedFile
		hwid      string
		wantCode  string
		wantInUse int
	}{
		{"a borrow holds a seat", 2, []Session{{ID: "a", HWID: "pc-a", LastSeenAt: now}}, []IssuedFile{borrow("laptop")}, "pc-c",
			CodeDeviceLimit, 2},
		{"session and borrow of one machine count once", 2, []Session{{ID: "a", HWID: "pc-a", LastSeenAt: now}},
			[]IssuedFile{borrow("pc-a")}, "pc-c", "", 2},
		{"the machine's own borrow is its seat", 1, nil, []IssuedFile{borrow("laptop")}, "laptop", "", 1},
		{"a stale session's machine still holds its borrow", 1, []Session{{ID: "a", HWID: "pc-a", LastSeenAt: stale.Add(-time.Second)}},
			[]IssuedFile{borrow("pc-a")}, "pc-c", CodeDeviceLimit, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSeats{live: c.live}
			st := f.seats(c.max)
			st.Borrowed = func() ([]IssuedFile, error) { return c.borrows, nil }
			taken, err := st.TakeSeat(c.hwid, stale, seen)
			if got := apperr.CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, c.wantCode, err)
			}
			if taken.InUse != c.wantInUse {
				t.Fatalf("taken %+v, want %d in use", taken, c.wantInUse)
			}
		})
	}
	// BorrowSeat leaves the machine's own live session open.
	f := &fakeSeats{live: []Session{{ID: "mine", HWID: "pc-a", LastSeenAt: now}}}
	st := f.seats(1)
	st.Borrowed = func() ([]IssuedFile, error) { return nil, nil }
	if _, err := st.BorrowSeat("pc-a", stale, seen); err != nil || len(f.ended) != 0 {
		t.Fatalf("BorrowSeat: %v, ended %v", err, f.ended)
	}
	// HoldsSeat: returned or expired files do not; revoked ones do.
	rev := now
	for _, c := range []struct {
		f    IssuedFile
		want bool
	}{{borrow("x"), true}, {IssuedFile{Floating: true, ValidUntil: now}, false}, {IssuedFile{Floating: true, ValidUntil: now.Add(time.Hour), ReturnedAt: &rev}, false},
		{IssuedFile{Floating: true, ValidUntil: now.Add(time.Hour), RevokedAt: &rev}, true}, {IssuedFile{ValidUntil: now.Add(time.Hour)}, false}} {
		if got := c.f.HoldsSeat(now); got != c.want {
			t.Errorf("HoldsSeat(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
}

// SeatHolders counts a floating key's seats as a login does: each seat
// session, then each machine holding a borrowed file and no seat session
// (once, however many files it holds); a borrowed file of a machine with a
// seat session is attached to that session, not counted again; returned,
// expired and non-floating files hold nothing.
func TestSeatHolders(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later := now.Add(time.Hour)
	d := &KeyDetail{Seats: []Session{{ID: "s1", HWID: "a"}, {ID: "s2", HWID: "b"}, {ID: "s3", HWID: "a"}}}
	files := []IssuedFile{
		{ID: "f-b", HWID: "b", Floating: true, ValidUntil: later},
		{ID: "f-c", HWID: "c", Floating: true, ValidUntil: later},
		{ID: "f-c2", HWID: "c", Floating: true, ValidUntil: later},
		{ID: "f-ret", HWID: "d", Floating: true, ValidUntil: later, ReturnedAt: &now},
		{ID: "f-old", HWID: "e", Floating: true, ValidUntil: now},
		{ID: "f-fixed", HWID: "f", ValidUntil: later},
	}
	var got []string
	for _, h := range d.SeatHolders(files, now) {
		s, f := "-", "-"
		if h.Session != nil {
			s = h.Session.ID
		}
		if h.File != nil {
			f = h.File.ID
		}
		got = append(got, h.HWID+":"+s+":"+f)
	}
	if want := "a:s1:- b:s2:f-b a:s3:- c:-:f-c"; strings.Join(got, " ") != want {
		t.Fatalf("SeatHolders = %v, want %s", got, want)
	}
	if n := len((&KeyDetail{}).SeatHolders(nil, now)); n != 0 {
		t.Fatalf("no seats: %d holders", n)
	}
}
