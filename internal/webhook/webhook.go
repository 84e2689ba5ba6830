// Package webhook delivers the events of the outbox to the owner's HTTP
// endpoints, signed, by the rules of ../shared/design/updates-and-webhooks.md:
// deliveries fanned out from the events table, attempts with a retry
// schedule and jitter, a destination paused after 20 failures in a row,
// manual redelivery. It knows nothing of SQL or HTTP: it declares the Store
// it needs and sends through a Sender.
package webhook

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/keyward/keyward/internal/apperr"
	"github.com/keyward/keyward/internal/audit"
	"github.com/keyward/keyward/internal/event"
	"github.com/keyward/keyward/internal/journal"
)

// Destination is an endpoint events are sent to. AppID "" receives the
// events of every app (and installation-wide ones).
type Destination struct {
	ID          int64
	AppID       string
	URL         string
	Secret      string
	Events      []string // empty: every event
	Description string
	Enabled     bool       // the owner's switch
	Failures    int        // failed attempts in a row
	PausedAt    *time.Time // set after PauseAfter failures in a row
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Wants reports whether the destination takes events of type t.
func (d *Destination) Wants(t string) bool {
	if len(d.Events) == 0 {
		return true
	}
	for _, e := range d.Events {
		if e == t || (strings.HasSuffix(e, ".*") && strings.HasPrefix(t, strings.TrimSuffix(e, "*"))) {
			return true
		}
	}
	return false
}

// Delivery statuses.
const (
	Pending   = "pending"
	Succeeded = "succeeded"
	Failed    = "failed"
)

// Delivery is one event for one destination, with its exact body.
type Delivery struct {
	ID            string // whd_…, the X-Webhook-Id of every attempt
	DestinationID int64
	EventID       int64
	AppID         string
	Event         string
	Body          []byte
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LockedUntil   time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Subject is the event's (event.Event.Subject): while a delivery with
	// the same destination and subject and a smaller EventID is pending,
	// this one is not claimed. "" takes no part in the order.
	Subject string
	// Sequence numbers the deliveries fanned out to one destination, 1, 2,
	// … in event order; the body carries it. 0 for deliveries made before
	// bodies carried it.
	Sequence int64

	// URL and Secret of the destination, filled when claimed for sending.
	URL, Secret string
}

// Attempt is one try at a delivery, as logged.
type Attempt struct {
	Attempt    int
	At         time.Time
	StatusCode int
	Duration   time.Duration
	Response   string // the first 2 KB of the answer
	Error      string
}

// DeliveryAttempt is an attempt of a delivery, as logged in a batch.
type DeliveryAttempt struct {
	DeliveryID string
	Attempt    Attempt
}

// DeliveryFilter selects deliveries for the admin log.
type DeliveryFilter struct {
	AppID         string // "" with DestinationID 0: all
	DestinationID int64
	Status        string
	Limit         int
}

// Store is the persistence webhooks need. Lookups return apperr.ErrNotFound
// for missing rows.
type Store interface {
	Destinations(ctx context.Context, appID string) ([]Destination, error)
	Destination(ctx context.Context, id int64) (*Destination, error)
	Deliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, error)
	Delivery(ctx context.Context, id string) (*Delivery, error)
	Attempts(ctx context.Context, deliveryID string) ([]Attempt, error)
	InTx(ctx context.Context, fn func(Tx) error) error
	// Analyze has the database's query planner learn how many deliveries
	// are pending, after a fan-out queued many: PostgreSQL plans the claim
	// from statistics that autovacuum refreshes only every minute or so,
	// and a claim planned for a near-empty queue tests every pending row
	// (docs/performance.md). It may do nothing, and may give up rather
	// than wait for a lock.
	Analyze(ctx context.Context) error
}

// Tx is a write transaction of webhooks.
type Tx interface {
	InsertDestination(ctx context.Context, d *Destination) error
	DestinationForUpdate(ctx context.Context, id int64) (*Destination, error)
	// DestinationsForUpdate returns those of the destinations that exist,
	// in id order, locked.
	DestinationsForUpdate(ctx context.Context, ids []int64) ([]Destination, error)
	UpdateDestination(ctx context.Context, d *Destination) error
	DeleteDestination(ctx context.Context, id int64) error

	// HasUndispatched reports whether any event waits to be fanned out,
	// without locking anything.
	HasUndispatched(ctx context.Context) (bool, error)
	// UndispatchedEvents returns up to limit events not yet fanned out,
	// oldest first, locked (skipping rows another process holds; under the
	// destinations' locks of EnabledDestinations no other fan-out holds
	// any).
	UndispatchedEvents(ctx context.Context, limit int) ([]event.Event, error)
	MarkDispatched(ctx context.Context, ids []int64, now time.Time) error
	// EnabledDestinations returns every enabled destination, paused or not,
	// locked until the transaction ends: fan-outs in several processes take
	// turns on these rows, so events are fanned out in id order and each
	// destination's sequence follows it.
	EnabledDestinations(ctx context.Context) ([]Destination, error)
	// AdvanceSequence adds n to a destination's delivery counter and
	// returns the new value: the deliveries numbered last-n+1 … last are
	// the caller's.
	AdvanceSequence(ctx context.Context, destinationID int64, n int) (last int64, err error)
	InsertDelivery(ctx context.Context, d *Delivery) error
	// InsertDeliveries inserts several deliveries, as InsertDelivery each.
	InsertDeliveries(ctx context.Context, ds []*Delivery) error
	// DueDeliveries returns up to limit pending deliveries due at now whose
	// lease is free, whose destination is enabled and not paused and that
	// no earlier pending delivery of the same subject to the same
	// destination holds back, with URL and Secret, locked (skipping rows
	// another process holds).
	DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error)
	// LeaseDeliveries counts an attempt of each of the deliveries (attempts
	// + 1) and holds it until until.
	LeaseDeliveries(ctx context.Context, ids []string, until, now time.Time) error
	DeliveryForUpdate(ctx context.Context, id string) (*Delivery, error)
	// DeliveriesForUpdate returns those of the deliveries that exist, in
	// id order, locked.
	DeliveriesForUpdate(ctx context.Context, ids []string) ([]Delivery, error)
	UpdateDelivery(ctx context.Context, d *Delivery) error
	// UpdateDeliveries is UpdateDelivery of each.
	UpdateDeliveries(ctx context.Context, ds []*Delivery) error
	AddAttempt(ctx context.Context, deliveryID string, a Attempt) error
	// AddAttempts logs several attempts, in order.
	AddAttempts(ctx context.Context, as []DeliveryAttempt) error
	// RequeueFailed makes failed deliveries created at or after since due
	// at now (of appID's destinations, or of one destination) and returns
	// how many.
	RequeueFailed(ctx context.Context, appID string, destinationID int64, since, now time.Time) (int, error)

	// AddEventID is AddEvent returning the new event's id.
	AddEventID(ctx context.Context, e event.Event) (int64, error)
	journal.Journal
}

// Service manages destinations and the delivery log.
type Service struct {
	store Store
	now   func() time.Time
	rand  io.Reader
	// allowed, when set, says whether deliveries may connect to an address
	// (the SSRF guard's rule, with --webhook-allow-networks).
	allowed func(netip.Addr) bool
}

// GuardAddresses makes registration refuse a URL whose host is an IP
// literal that allowed refuses, so the owner learns at once rather than
// from the delivery log. Host names are left to the check at connect time
// (after DNS resolution): what a name resolves to may change between
// registration and delivery, so only that check is authoritative, and
// resolving here would let admins probe the server's internal DNS.
func (s *Service) GuardAddresses(allowed func(netip.Addr) bool) { s.allowed = allowed }

// checkAddress refuses a URL whose host is an IP literal the guard refuses.
func (s *Service) checkAddress(raw string) error {
	if s.allowed == nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil // CheckDestination refuses it
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil // a host name: checked when connecting
	}
	if !s.allowed(ip) {
		return apperr.InvalidField("url", ip.String()+" is a private, loopback, link-local or reserved address, "+
			"which webhooks may not reach; the server operator can allow its network with --webhook-allow-networks")
	}
	return nil
}

// NewService returns a Service over store.
func NewService(store Store, now func() time.Time, rand io.Reader) *Service {
	return &Service{store: store, now: now, rand: rand}
}

func (s *Service) clock() time.Time { return s.now().UTC() }

// NewSecret returns a destination secret in the Standard Webhooks form
// whsec_<base64 of 32 random bytes>.
func NewSecret(r io.Reader) (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// NewDeliveryID returns a fresh whd_ delivery id.
func NewDeliveryID(r io.Reader) (string, error) {
	b := make([]byte, 16)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return "whd_" + hex.EncodeToString(b), nil
}

var eventNameRE = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*(\.\*)?$`)

// CheckDestination validates what an owner sets.
func CheckDestination(d *Destination) error {
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(d.URL) > 2048 {
		return apperr.InvalidField("url", "must be an http(s) URL of at most 2048 bytes")
	}
	if len(d.Events) > 50 {
		return apperr.InvalidField("events", "at most 50 event names")
	}
	for _, e := range d.Events {
		if !eventNameRE.MatchString(e) || len(e) > 64 {
			return apperr.InvalidField("events", "names such as key.banned, key_expired or subscription.*")
		}
	}
	if len(d.Description) > 500 {
		return apperr.InvalidField("description", "must be at most 500 bytes")
	}
	return nil
}

// CreateDestination validates and stores a destination with a fresh secret.
func (s *Service) CreateDestination(ctx context.Context, actor audit.Actor, d *Destination) error {
	if err := CheckDestination(d); err != nil {
		return err
	}
	if err := s.checkAddress(d.URL); err != nil {
		return err
	}
	secret, err := NewSecret(s.rand)
	if err != nil {
		return err
	}
	now := s.clock()
	d.Secret, d.Enabled, d.Failures, d.PausedAt, d.CreatedAt, d.UpdatedAt = secret, true, 0, nil, now, now
	return s.store.InTx(ctx, func(tx Tx) error {
		if err := tx.InsertDestination(ctx, d); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "webhook.create", d.AppID, d.URL, map[string]any{"id": d.ID, "events": d.Events}))
	})
}

// Destinations lists the destinations of an app (with those for every app)
// or, with appID "", all of them.
func (s *Service) Destinations(ctx context.Context, appID string) ([]Destination, error) {
	return s.store.Destinations(ctx, appID)
}

// Destination returns one destination.
func (s *Service) Destination(ctx context.Context, id int64) (*Destination, error) {
	d, err := s.store.Destination(ctx, id)
	return d, apperr.NotFoundAs(err, "Webhook")
}

// UpdateDestination applies change to a stored destination and validates it.
func (s *Service) UpdateDestination(ctx context.Context, actor audit.Actor, id int64, action string, change func(*Destination) error) (*Destination, error) {
	now := s.clock()
	var out *Destination
	err := s.store.InTx(ctx, func(tx Tx) error {
		d, err := tx.DestinationForUpdate(ctx, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Webhook")
		}
		old := d.URL
		if err := change(d); err != nil {
			return err
		}
		if err := CheckDestination(d); err != nil {
			return err
		}
		// Only a changed URL is checked, so a destination registered
		// before the check can still be paused, resumed or deleted.
		if d.URL != old {
			if err := s.checkAddress(d.URL); err != nil {
				return err
			}
		}
		d.UpdatedAt = now
		if err := tx.UpdateDestination(ctx, d); err != nil {
			return err
		}
		out = d
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, action, d.AppID, d.URL, map[string]any{"id": id, "enabled": d.Enabled}))
	})
	return out, err
}

// Edit changes url, events, description or the enabled switch (nil leaves
// a field). Enabling clears an automatic pause and the failure count, so
// the waiting deliveries go out.
type Edit struct {
	URL         *string
	Events      *[]string
	Description *string
	Enabled     *bool
}

// EditDestination applies e.
func (s *Service) EditDestination(ctx context.Context, actor audit.Actor, id int64, e Edit) (*Destination, error) {
	return s.UpdateDestination(ctx, actor, id, "webhook.update", func(d *Destination) error {
		if e.URL != nil {
			d.URL = strings.TrimSpace(*e.URL)
		}
		if e.Events != nil {
			d.Events = *e.Events
		}
		if e.Description != nil {
			d.Description = *e.Description
		}
		if e.Enabled != nil {
			d.Enabled = *e.Enabled
			if d.Enabled {
				d.PausedAt, d.Failures = nil, 0
			}
		}
		return nil
	})
}

// RotateSecret gives a destination a new secret; the old one stops signing
// at once.
func (s *Service) RotateSecret(ctx context.Context, actor audit.Actor, id int64) (*Destination, error) {
	secret, err := NewSecret(s.rand)
	if err != nil {
		return nil, err
	}
	return s.UpdateDestination(ctx, actor, id, "webhook.rotate_secret", func(d *Destination) error {
		d.Secret = secret
		return nil
	})
}

// DeleteDestination removes a destination and its delivery log.
func (s *Service) DeleteDestination(ctx context.Context, actor audit.Actor, id int64) error {
	now := s.clock()
	return s.store.InTx(ctx, func(tx Tx) error {
		d, err := tx.DestinationForUpdate(ctx, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Webhook")
		}
		if err := tx.DeleteDestination(ctx, id); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "webhook.delete", d.AppID, d.URL, map[string]any{"id": id}))
	})
}

// SendTest queues a "test" event for one destination only (even when its
// filter would not take it) and returns the delivery id.
func (s *Service) SendTest(ctx context.Context, actor audit.Actor, id int64) (string, error) {
	did, err := NewDeliveryID(s.rand)
	if err != nil {
		return "", err
	}
	now := s.clock()
	err = s.store.InTx(ctx, func(tx Tx) error {
		d, err := tx.DestinationForUpdate(ctx, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Webhook")
		}
		ev := event.Event{AppID: d.AppID, Type: event.Test, CreatedAt: now,
			Data: map[string]any{"webhook_id": d.ID, "message": "This is a test delivery from keyward."}}
		evID, err := tx.AddEventID(ctx, ev)
		if err != nil {
			return err
		}
		if err := tx.MarkDispatched(ctx, []int64{evID}, now); err != nil {
			return err
		}
		ev.ID = evID
		seq, err := tx.AdvanceSequence(ctx, d.ID, 1)
		if err != nil {
			return err
		}
		del := newDelivery(did, d, ev, seq, now)
		if err := tx.InsertDelivery(ctx, del); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "webhook.test", d.AppID, d.URL, map[string]any{"id": id, "delivery_id": did}))
	})
	return did, err
}

// Deliveries lists the delivery log, newest first.
func (s *Service) Deliveries(ctx context.Context, f DeliveryFilter) ([]Delivery, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	return s.store.Deliveries(ctx, f)
}

// Delivery returns one delivery and its attempts.
func (s *Service) Delivery(ctx context.Context, id string) (*Delivery, []Attempt, error) {
	d, err := s.store.Delivery(ctx, id)
	if err != nil {
		return nil, nil, apperr.NotFoundAs(err, "Delivery")
	}
	as, err := s.store.Attempts(ctx, id)
	return d, as, err
}

// Redeliver makes one delivery due now, whatever its status; its id (and so
// X-Webhook-Id), body (event id and sequence) stay, and its attempts count
// on. A redelivery by hand is outside the per-subject order: an old event
// sent again arrives after the newer ones already delivered. While it is
// pending it holds back later pending deliveries of its subject, as any
// earlier delivery does, so those still keep their order behind it.
func (s *Service) Redeliver(ctx context.Context, actor audit.Actor, id string) (*Delivery, error) {
	now := s.clock()
	var out *Delivery
	err := s.store.InTx(ctx, func(tx Tx) error {
		d, err := tx.DeliveryForUpdate(ctx, id)
		if err != nil {
			return apperr.NotFoundAs(err, "Delivery")
		}
		d.Status, d.NextAttemptAt, d.LockedUntil, d.UpdatedAt = Pending, now, time.Time{}, now
		if err := tx.UpdateDelivery(ctx, d); err != nil {
			return err
		}
		out = d
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "webhook.redeliver", d.AppID, d.ID, map[string]any{"event": d.Event}))
	})
	return out, err
}

// RedeliverFailed requeues the failed deliveries created since a time, of
// one destination (id > 0) or of an app's destinations.
func (s *Service) RedeliverFailed(ctx context.Context, actor audit.Actor, appID string, id int64, since time.Time) (int, error) {
	now := s.clock()
	var n int
	err := s.store.InTx(ctx, func(tx Tx) error {
		if id > 0 {
			d, err := tx.DestinationForUpdate(ctx, id)
			if err != nil {
				return apperr.NotFoundAs(err, "Webhook")
			}
			appID = d.AppID // the audit entry belongs to the destination's app
		}
		var err error
		if n, err = tx.RequeueFailed(ctx, appID, id, since, now); err != nil {
			return err
		}
		return tx.AddAudit(ctx, audit.NewEntry(actor, now, "webhook.redeliver_failed", appID, "",
			map[string]any{"webhook_id": id, "since": since, "count": n}))
	})
	return n, err
}
