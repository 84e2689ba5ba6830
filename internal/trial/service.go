// Package trial gives devices their one trial of an app: a short-lived key
// bound to the device with a session open on it, at most one per device
// and a capped number per client address, and the owner's conversion of a
// trial key into a full one. Trial keys are ordinary license keys, so
// heartbeats, bans and expiry are license's; their seats are license.Seats.
package trial

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/journal"
	"github.com/keyward/keyward/internal/license"
)

// Trial records the one trial a device got from an app. KeyID is nil once the
// owner deleted the trial key; the device still counts as having had its trial.
type Trial struct {
	ID        int64
	AppID     string
	HWID      string
	KeyID     *int64
	IP        string
	CreatedAt time.Time
	// Filled by listings that join the key.
	LicenseKey string
	Status     license.Status
	ExpiresAt  *time.Time
}

// Store is the persistence trials need.
type Store interface {
	// Trials lists an app's trials, newest first, joined with their keys;
	// before is the cursor (a trial's ID; 0 for the first page).
	Trials(ctx context.Context, appID string, before int64, limit int) ([]Trial, error)
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is a write transaction of trials. Key reads lock the row on engines
// that can.
type Tx interface {
	// LockApp serialises writers of one app's trials across processes (a
	// row lock on PostgreSQL; SQLite has a single writer anyway).
	LockApp(ctx context.Context, appID string) error
	// TrialOf returns the trial a device got from an app (ErrNotFound if none).
	TrialOf(ctx context.Context, appID, hwid string) (*Trial, error)
	// IsTrialKey reports whether the key was issued as a device's trial.
	IsTrialKey(ctx context.Context, keyID int64) (bool, error)
	// CountTrialsFromIP counts the app's trials started from ip since then.
	CountTrialsFromIP(ctx context.Context, appID, ip string, since time.Time) (int, error)
	InsertTrial(ctx context.Context, t *Trial) error

	// KeyByIDForUpdate reads a key of the app by its ID, locking the row.
	KeyByIDForUpdate(ctx context.Context, appID string, id int64) (*license.Key, error)
	// KeyForUpdate reads a key of the app by its string, locking the row.
	KeyForUpdate(ctx context.Context, appID, licenseKey string) (*license.Key, error)
	InsertKeys(ctx context.Context, keys []license.Key) error
	UpdateKey(ctx context.Context, k *license.Key) error
	InsertSession(ctx context.Context, s *license.Session) error
	// SeatTx binds the device and retires overflowing sessions (license.KeySeats).
	license.SeatTx

	journal.Journal
}

// Sessions is what trials need of the license service (*license.Service is
// one).
type Sessions interface {
	SessionTimeout() time.Duration
}

// Service implements the trial rules. It is safe for concurrent use.
type Service struct {
	store  Store
	lic    Sessions
	now    func() time.Time
	random io.Reader
}

// New returns a Service. now is the clock; random the source of trial keys
// and session tokens (crypto/rand.Reader when nil).
func New(store Store, lic Sessions, now func() time.Time, random io.Reader) *Service {
	if random == nil {
		random = rand.Reader
	}
	return &Service{store: store, lic: lic, now: now, random: random}
}

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now().UTC() }

func (s *Service) randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.random, b); err != nil {
		return "", apperr.Wrap(err, "random")
	}
	return hex.EncodeToString(b), nil
}
