package license

import (
	"context"
	"fmt"
	"time"

	"github.com/keyward/keyward/internal/apperr"
)

// Seats are the devices and sessions of one license holder, a key or an
// app user account: BindDevice and RetireOverflow apply the same
// max_devices rules to both, in one implementation that the license, trial
// and account packages share. The functions act inside the caller's
// transaction.
type Seats struct {
	// Max is the holder's max_devices.
	Max int
	// What names the holder in refusals: "license key" or "account".
	What string
	// Devices lists the bound devices; Bind binds one (or refreshes it).
	Devices func() ([]Device, error)
	Bind    func(hwid string) error
	// Live lists the open sessions, oldest first; End ends one.
	Live func() ([]Session, error)
	End  func(id, reason string) error
	// Borrowed lists the license files holding a seat of a floating holder
	// (IssuedFile.HoldsSeat); nil: none (accounts, trials).
	Borrowed func() ([]IssuedFile, error)
}

// borrowTx is what a key's borrowed seats need of a transaction: the
// license package's Tx has it, the trial package's need not.
type borrowTx interface {
	BorrowsOfKey(ctx context.Context, keyID int64, now time.Time) ([]IssuedFile, error)
}

// SeatTx is what a key's seats need of a transaction.
type SeatTx interface {
	Devices(ctx context.Context, keyID int64) ([]Device, error)
	UpsertDevice(ctx context.Context, keyID int64, hwid string, now time.Time) error
	LiveSessionsOfKey(ctx context.Context, keyID int64) ([]Session, error)
	EndSession(ctx context.Context, id, reason string, now time.Time) error
}

// KeySeats are k's seats inside tx at now. When tx can list borrowed
// seats (license files of a floating key), they count too.
func KeySeats(ctx context.Context, tx SeatTx, k *Key, now time.Time) Seats {
	st := Seats{Max: k.MaxDevices, What: "license key",
		Devices: func() ([]Device, error) { return tx.Devices(ctx, k.ID) },
		Bind:    func(hwid string) error { return tx.UpsertDevice(ctx, k.ID, hwid, now) },
		Live:    func() ([]Session, error) { return tx.LiveSessionsOfKey(ctx, k.ID) },
		End:     func(id, reason string) error { return tx.EndSession(ctx, id, reason, now) }}
	if bt, ok := tx.(borrowTx); ok && k.Floating {
		st.Borrowed = func() ([]IssuedFile, error) { return bt.BorrowsOfKey(ctx, k.ID, now) }
	}
	return st
}

// bindDevice records hwid on k, refusing a new device once max_devices are bound.
func bindDevice(ctx context.Context, tx Tx, k *Key, hwid string, now time.Time) error {
	return KeySeats(ctx, tx, k, now).BindDevice(hwid)
}

// BindDevice records hwid, refusing a new device once Max are bound:
// HWID_MISMATCH for single-device holders, DEVICE_LIMIT otherwise.
func (st Seats) BindDevice(hwid string) error {
	devices, err := st.Devices()
	if err != nil {
		return err
	}
	known := false
	for _, d := range devices {
		if d.HWID == hwid {
			known = true
			break
		}
	}
	if !known && len(devices) >= st.Max {
		if st.Max <= 1 {
			return apperr.New(apperr.Forbidden, CodeHWIDMismatch, "This "+st.What+" is bound to another device.")
		}
		return apperr.New(apperr.Forbidden, CodeDeviceLimit, "This "+st.What+" is already in use on the maximum number of devices.").
			With("devices_used", len(devices)).With("max_devices", st.Max)
	}
	return st.Bind(hwid)
}

func retireOverflow(ctx context.Context, tx Tx, k *Key, hwid string, now, staleBefore time.Time) error {
	return KeySeats(ctx, tx, k, now).RetireOverflow(hwid, staleBefore)
}

// RetireOverflow ends sessions until one more fits in the seats. It
// retires, in order: a session already silent past the timeout (stale
// before: dead, just not reaped yet), the oldest session of the same device
// (an app restarted after a crash replaces its own stale session rather than
// another machine's), then the oldest session overall.
func (st Seats) RetireOverflow(hwid string, staleBefore time.Time) error {
	live, err := st.Live()
	if err != nil {
		return err
	}
	for len(live) >= max(st.Max, 1) {
		victim, sameDevice := -1, -1
		for i, ss := range live {
			if ss.LastSeenAt.Before(staleBefore) {
				victim = i
				break
			}
			if sameDevice < 0 && ss.HWID == hwid {
				sameDevice = i
			}
		}
		if victim < 0 {
			victim = max(sameDevice, 0)
		}
		if err := st.End(live[victim].ID, CodeSessionExpired); err != nil {
			return err
		}
		live = append(live[:victim], live[victim+1:]...)
	}
	return nil
}

// SeatTaken is the seat a floating login took: how many seats were held
// with it, and of how many.
type SeatTaken struct {
	InUse, Max int
}

// TakeSeat is login's rule for a floating holder (Key.Floating), which
// binds no device: Max counts the machines holding a seat, by a live
// session or by a borrowed license file (Borrowed), on any machines. A
// session silent since before staleBefore (by lastSeen, which may know of a
// heartbeat not yet written) holds no seat and is ended as
// SESSION_EXPIRED, as the reaper would; a session of the same hwid is
// replaced (an app restarting after a crash reuses its own seat rather
// than being refused), and a file borrowed by the same hwid is its seat
// already. When every other seat is held the login is refused with
// DEVICE_LIMIT, saying so, and nothing is ended but the stale sessions.
// The caller must hold the holder's row lock (the key read for update), so
// the count and the session insert that follows are one step across
// processes.
func (st Seats) TakeSeat(hwid string, staleBefore time.Time, lastSeen func(*Session) time.Time) (SeatTaken, error) {
	taken, same, err := st.countSeats(hwid, staleBefore, lastSeen)
	if err != nil {
		return taken, err
	}
	for _, ss := range same {
		if err := st.End(ss.ID, CodeSessionExpired); err != nil {
			return SeatTaken{}, err
		}
	}
	return taken, nil
}

// BorrowSeat is TakeSeat for a license file of a floating holder (a
// borrowed seat): the same count, but the device's own live session, if
// any, stays open — the machine keeps one seat, online and then offline.
func (st Seats) BorrowSeat(hwid string, staleBefore time.Time, lastSeen func(*Session) time.Time) (SeatTaken, error) {
	taken, _, err := st.countSeats(hwid, staleBefore, lastSeen)
	return taken, err
}

// countSeats is the one count of a floating holder's seats: the machines
// other than hwid holding one by a live session or an unreturned,
// unexpired borrowed file (a machine holding both counts once). It ends
// stale sessions on the way and returns hwid's own live sessions, and
// DEVICE_LIMIT when no seat is left for hwid.
func (st Seats) countSeats(hwid string, staleBefore time.Time, lastSeen func(*Session) time.Time) (SeatTaken, []Session, error) {
	live, err := st.Live()
	if err != nil {
		return SeatTaken{}, nil, err
	}
	var same []Session
	nHeld := 0
	for i := range live {
		ss := &live[i]
		switch {
		case lastSeen(ss).Before(staleBefore):
			if err := st.End(ss.ID, CodeSessionExpired); err != nil {
				return SeatTaken{}, nil, err
			}
		case ss.HWID == hwid:
			same = append(same, *ss)
		default:
			nHeld++
		}
	}
	if st.Borrowed != nil {
		borrows, err := st.Borrowed()
		if err != nil {
			return SeatTaken{}, nil, err
		}
		machines := map[string]bool{}
		for _, ss := range live {
			if !lastSeen(&ss).Before(staleBefore) {
				machines[ss.HWID] = true
			}
		}
		for _, b := range borrows {
			if b.HWID != hwid && !machines[b.HWID] {
				machines[b.HWID] = true
				nHeld++
			}
		}
	}
	limit := max(st.Max, 1)
	if nHeld >= limit {
		return SeatTaken{InUse: nHeld, Max: limit}, nil, SeatsFull(nHeld, limit)
	}
	return SeatTaken{InUse: nHeld + 1, Max: limit}, same, nil
}

// SeatsFull is the DEVICE_LIMIT refusal of a floating login: every one of
// limit seats is held. It carries devices_used and max_devices like the
// device-limit refusal shipped clients know.
func SeatsFull(inUse, limit int) error {
	what := fmt.Sprintf("All %d seats of this license are in use", limit)
	if limit == 1 {
		what = "The one seat of this license is in use"
	}
	return apperr.New(apperr.Forbidden, CodeDeviceLimit,
		what+"; close the app on another machine or wait for a seat to free.").
		With("devices_used", inUse).With("max_devices", limit)
}
